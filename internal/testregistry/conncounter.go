package testregistry

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// ConnCounter is a TCP relay in front of a server that counts connections
// by what they begin with: a TLS handshake record (0x16) or anything else
// (plain HTTP). It sees what no HTTP-level counter can: a TLS probe that
// never becomes a request, or one that a plain HTTP server refuses.
type ConnCounter struct {
	// Host is the relay's 127.0.0.1:port.
	Host string
	// TLS and Plain count connections by their first byte; Conns counts all
	// (a connection that sends nothing is in Conns only).
	TLS, Plain, Conns atomic.Int64

	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	open  map[net.Conn]bool
	close bool
}

// tlsHandshakeRecord is the content type of a TLS handshake record, the
// first byte a TLS client sends.
const tlsHandshakeRecord = 0x16

// NewConnCounter relays connections to target (host:port).
func NewConnCounter(target string) (*ConnCounter, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testregistry: conn counter: %w", err)
	}
	cc := &ConnCounter{Host: ln.Addr().String(), ln: ln, target: target, open: map[net.Conn]bool{}}
	cc.wg.Add(1)
	go func() {
		defer cc.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cc.Conns.Add(1)
			cc.wg.Add(1)
			go func() {
				defer cc.wg.Done()
				cc.relay(c)
			}()
		}
	}()
	return cc, nil
}

func (cc *ConnCounter) track(c net.Conn) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.close {
		c.Close()
		return false
	}
	cc.open[c] = true
	return true
}

func (cc *ConnCounter) untrack(c net.Conn) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.open, c)
	c.Close()
}

func (cc *ConnCounter) relay(client net.Conn) {
	if !cc.track(client) {
		return
	}
	defer cc.untrack(client)
	first := make([]byte, 1)
	if _, err := io.ReadFull(client, first); err != nil {
		return
	}
	if first[0] == tlsHandshakeRecord {
		cc.TLS.Add(1)
	} else {
		cc.Plain.Add(1)
	}
	server, err := net.Dial("tcp", cc.target)
	if err != nil {
		return
	}
	if !cc.track(server) {
		return
	}
	defer cc.untrack(server)
	if _, err := server.Write(first); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Pass the half-close on, so a server's close reaches the client.
		if t, ok := dst.(*net.TCPConn); ok {
			_ = t.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}

// Close stops the relay and ends every connection through it.
func (cc *ConnCounter) Close() {
	cc.ln.Close()
	cc.mu.Lock()
	cc.close = true
	for c := range cc.open {
		c.Close()
	}
	cc.mu.Unlock()
	cc.wg.Wait()
}

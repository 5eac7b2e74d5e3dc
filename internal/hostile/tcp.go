package hostile

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// TCP is a raw listener that does something rude with every connection.
type TCP struct {
	Host string
	// Accepted counts connections.
	Accepted atomic.Int64
	// Abandoned counts the connections of a Silent server that the client
	// closed: it gave up waiting, not the server.
	Abandoned atomic.Int64

	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// Silent accepts connections and never writes a byte (nor closes them
// until Close).
func Silent() (*TCP, error) {
	return startTCP(func(t *TCP, c net.Conn) {
		// Whatever the client sends is read; the read ends without an
		// error when the client closes, with one when Close does.
		if _, err := io.Copy(io.Discard, c); err == nil || errors.Is(err, syscall.ECONNRESET) {
			t.Abandoned.Add(1)
		}
	})
}

// Resetter accepts connections, reads the start of the request and resets
// the connection (RST).
func Resetter() (*TCP, error) {
	return startTCP(func(_ *TCP, c net.Conn) {
		buf := make([]byte, 1024)
		_, _ = c.Read(buf)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	})
}

func startTCP(handle func(*TCP, net.Conn)) (*TCP, error) {
	ln, err := listen()
	if err != nil {
		return nil, err
	}
	t := &TCP{Host: ln.Addr().String(), ln: ln}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Accepted.Add(1)
			t.mu.Lock()
			t.conns = append(t.conns, c)
			t.mu.Unlock()
			go handle(t, c)
		}
	}()
	return t, nil
}

// Close stops listening and closes every connection.
func (t *TCP) Close() {
	t.ln.Close()
	t.wg.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.conns {
		c.Close()
	}
}

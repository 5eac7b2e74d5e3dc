//go:build bench

package main

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// rttProxy is a TCP proxy that makes 127.0.0.1 look like a distant server:
// every byte is held for RTT/2 in each direction, so one HTTP exchange on a
// kept-alive connection costs one RTT, and a new connection costs one more
// (the TCP handshake: its first bytes leave RTT after the accept). It counts
// the connections it accepts and, when counting, the bytes it delivers to
// the clients (HTTP headers included). Bandwidth is not limited.
type rttProxy struct {
	ln        net.Listener
	target    atomic.Value // host:port the connections go to
	rtt       atomic.Int64 // nanoseconds; read once per connection
	handshake atomic.Bool
	conns     atomic.Int64
	down      atomic.Int64 // bytes from the target to the clients
	// counting turns the byte count on for new connections: off, RTT 0
	// keeps the kernel's splice (case 3's pulls go through here).
	counting atomic.Bool

	mu     sync.Mutex
	live   map[net.Conn]struct{}
	closed bool
}

func newRTTProxy(rtt time.Duration, handshake bool) (*rttProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &rttProxy{ln: ln, live: map[net.Conn]struct{}{}}
	p.handshake.Store(handshake)
	p.rtt.Store(int64(rtt))
	go p.serve()
	return p, nil
}

// Addr is host:port of the proxy.
func (p *rttProxy) Addr() string { return p.ln.Addr().String() }

func (p *rttProxy) setTarget(hostport string) { p.target.Store(hostport) }
func (p *rttProxy) setRTT(d time.Duration)    { p.rtt.Store(int64(d)) }
func (p *rttProxy) RTT() time.Duration        { return time.Duration(p.rtt.Load()) }
func (p *rttProxy) newConns() int64           { return p.conns.Load() }
func (p *rttProxy) resetConns()               { p.conns.Store(0) }
func (p *rttProxy) bytesDown() int64          { return p.down.Load() }
func (p *rttProxy) resetBytes()               { p.down.Store(0) }
func (p *rttProxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		if p.closed {
			return false
		}
		p.live[c] = struct{}{}
	} else {
		delete(p.live, c)
	}
	return true
}

// Close stops accepting and cuts every open connection.
func (p *rttProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.live {
		c.Close()
	}
	p.mu.Unlock()
}

// dropConns cuts the open connections (a client's kept-alive ones) so that
// the next case starts from new connections at the new RTT.
func (p *rttProxy) dropConns() {
	p.mu.Lock()
	for c := range p.live {
		c.Close()
	}
	p.mu.Unlock()
}

func (p *rttProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		accepted := time.Now()
		p.conns.Add(1)
		go p.handle(c, accepted)
	}
}

func (p *rttProxy) handle(c net.Conn, accepted time.Time) {
	target, _ := p.target.Load().(string)
	up, err := net.Dial("tcp", target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, true) || !p.track(up, true) {
		c.Close()
		up.Close()
		return
	}
	defer func() {
		c.Close()
		up.Close()
		p.track(c, false)
		p.track(up, false)
	}()
	rtt := time.Duration(p.rtt.Load())
	// What reaches the client is counted, not what the proxy reads ahead
	// from the server: a client that drops a GET early (crane, for a blob
	// its layout holds) is charged with what it was sent.
	var to net.Conn = c
	if p.counting.Load() {
		to = &countedConn{Conn: c, n: &p.down}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	if rtt == 0 {
		go func() { defer wg.Done(); copyClose(up, c) }()
		go func() { defer wg.Done(); copyClose(to, up) }()
	} else {
		ready := accepted
		if p.handshake.Load() {
			ready = accepted.Add(rtt)
		}
		go func() { defer wg.Done(); delayCopy(up, c, rtt/2, ready) }()
		go func() { defer wg.Done(); delayCopy(to, up, rtt/2, time.Time{}) }()
	}
	wg.Wait()
}

// countedConn counts the bytes written to it.
type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (c *countedConn) CloseWrite() error {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		return tc.CloseWrite()
	}
	return c.Conn.Close()
}

func copyClose(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	closeWrite(dst)
	if err != nil {
		src.Close()
		dst.Close()
	}
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	} else {
		c.Close()
	}
}

type chunk struct {
	b  []byte
	at time.Time
}

// delayCopy forwards src to dst, each chunk leaving delay after it arrived,
// or delay after notBefore (the end of the handshake) when it came earlier:
// a request on a new connection then costs 2 RTT, as over real TCP.
func delayCopy(dst, src net.Conn, delay time.Duration, notBefore time.Time) {
	ch := make(chan chunk, 4096)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	failed := false
	for c := range ch {
		if failed {
			continue
		}
		// Bytes written before the handshake completed leave when it does.
		at := c.at
		if at.Before(notBefore) {
			at = notBefore
		}
		when := at.Add(delay)
		if d := time.Until(when); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.b); err != nil {
			failed = true
			src.Close()
			dst.Close()
		}
	}
	if !failed {
		closeWrite(dst)
	}
}

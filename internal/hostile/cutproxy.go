package hostile

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// CutProxy is a reverse proxy in front of a real registry that plays a
// flaky link for blob downloads: the first Cuts GETs of
// each blob are cut — the connection closed — after CutAfter bytes of their
// body. With IgnoreRange it drops the Range header, so the registry answers
// 200 and the whole blob, as distribution's pull-through cache does on a
// miss. It counts the blob body bytes it passes on: what a client
// downloaded, measured outside the client.
type CutProxy struct {
	front
	// BlobBytes is the body bytes of blob GETs sent to clients.
	BlobBytes atomic.Int64

	mu          sync.Mutex
	cuts        int
	cutAfter    int64
	ignoreRange bool
	cut         map[string]int  // blob path → GETs cut so far
	ranges      []string        // Range header of every blob GET, in order
	hold        int64           // > 0: stop every blob body once BlobBytes reaches it
	reserved    int64           // bytes let through under hold
	held        chan struct{}   // closed by Release
	corrupt     map[string]bool // blob digest → every byte of its bodies inverted
}

// NewCutProxy proxies to target (http://host:port) without faults until
// SetCuts or Hold.
func NewCutProxy(target string) (*CutProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &CutProxy{cut: map[string]int{}, corrupt: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	p.front = newFront(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/sha") {
			rp.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.ranges = append(p.ranges, r.Header.Get("Range"))
		limit := int64(-1)
		if p.cut[r.URL.Path] < p.cuts {
			p.cut[r.URL.Path]++
			limit = p.cutAfter
		}
		if p.ignoreRange {
			r.Header.Del("Range")
		}
		corrupt := p.corrupt[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]
		p.mu.Unlock()
		rp.ServeHTTP(&cutWriter{ResponseWriter: w, p: p, r: r, limit: limit, corrupt: corrupt}, r)
	}))
	return p, nil
}

// SetCuts cuts the first cuts GETs of each blob (counted from now) after
// after bytes; ignoreRange makes the registry answer every GET whole.
func (p *CutProxy) SetCuts(cuts int, after int64, ignoreRange bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cuts, p.cutAfter, p.ignoreRange = cuts, after, ignoreRange
	p.cut = map[string]int{}
	p.ranges = nil
	p.BlobBytes.Store(0)
}

// Hold stops every blob body once BlobBytes reaches n: what was sent is
// sent, and no further byte until Release (or the client goes away).
func (p *CutProxy) Hold(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold, p.held, p.reserved = n, make(chan struct{}), p.BlobBytes.Load()
}

// Release ends Hold.
func (p *CutProxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
	}
	p.hold, p.held = 0, nil
}

// Corrupt makes the proxy a hostile registry for blob d (a digest):
// every byte of its bodies is inverted, the length and the headers left
// as the registry sent them. on false serves it honestly again.
func (p *CutProxy) Corrupt(d string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.corrupt[d] = on
}

// Ranges is the Range header of every blob GET since SetCuts ("" for none).
func (p *CutProxy) Ranges() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ranges...)
}

// errCut makes httputil.ReverseProxy abort the answer: the connection is
// closed mid-body.
type cutError struct{}

func (cutError) Error() string { return "hostile: body cut" }

type cutWriter struct {
	http.ResponseWriter
	p       *CutProxy
	r       *http.Request
	limit   int64 // bytes of this body before the cut; -1: none
	n       int64
	corrupt bool
}

func (c *cutWriter) Write(b []byte) (int, error) {
	cut := c.limit >= 0 && c.n+int64(len(b)) > c.limit
	if cut {
		b = b[:c.limit-c.n]
	}
	wait := false
	c.p.mu.Lock()
	held := c.p.held
	if c.p.hold > 0 {
		if left := c.p.hold - c.p.reserved; int64(len(b)) >= left {
			b, wait = b[:max(left, 0)], true
		}
		c.p.reserved += int64(len(b))
	}
	c.p.mu.Unlock()
	if c.corrupt {
		inv := make([]byte, len(b))
		for i, x := range b {
			inv[i] = ^x
		}
		b = inv
	}
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	c.p.BlobBytes.Add(int64(n))
	if err != nil {
		return n, err
	}
	if cut || wait {
		c.Flush()
	}
	if wait {
		select {
		case <-held:
		case <-c.r.Context().Done():
		}
		return n, cutError{}
	}
	if cut {
		return n, cutError{}
	}
	return n, nil
}

func (c *cutWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

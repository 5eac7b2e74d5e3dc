package hostile

import (
	"math/rand/v2"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Injection is one kind of fault a SeededFaultProxy injects.
type Injection int

const (
	NoFault        Injection = iota
	FaultReset               // the connection is reset (before the registry sees a GET or POST; after it answered a PATCH or PUT)
	FaultTruncate            // a GET's body is cut at a random point
	FaultStall               // a GET's body stops after a random point until the client gives up
	Fault429                 // 429 Too Many Requests, Retry-After: 1
	Fault503                 // 503 Service Unavailable, Retry-After: 1
	Fault500                 // 500 Internal Server Error
	FaultSlowStart           // the answer starts after a delay (under the client's timeout)
	numFaults
)

var faultNames = [...]string{"none", "reset", "truncate", "stall", "429", "503", "500", "slow-start"}

func (f Injection) String() string { return faultNames[f] }

// FaultOdds are the per-request probabilities of each fault (their sum at
// most 1); SlowStart is the longest delay of a slow start.
type FaultOdds struct {
	Reset, Truncate, Stall, TooMany, Unavailable, Internal, Slow float64
	SlowStart                                                    time.Duration
	// ResetAfter, when set, says which requests a reset meets after the
	// registry acted on them (the answer is lost), not before.
	ResetAfter func(*http.Request) bool
	// Spare, when set, says which requests are never faulted.
	Spare func(*http.Request) bool
}

// SeededFaultProxy is a reverse proxy in front of a real registry that
// draws a fault for each request from a seeded generator (the fault
// campaign, issue 20). The seed fixes the sequence of draws; which request
// gets which draw also depends on the order requests arrive. Stop ends the
// faults (and releases every stalled body), so what follows is not faulted.
// The Host header is passed on unchanged, so the registry's upload
// Locations point back at the proxy.
type SeededFaultProxy struct {
	front
	Requests atomic.Int64

	mu       sync.Mutex
	rng      *rand.Rand
	odds     FaultOdds
	stopped  bool
	released chan struct{}
	injected [numFaults]int
	log      []string // "METHOD path: fault" of every faulted request
}

// NewSeededFaultProxy proxies to target (http://host:port) with odds,
// drawing from seed.
func NewSeededFaultProxy(target string, seed uint64, odds FaultOdds) (*SeededFaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &SeededFaultProxy{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), odds: odds, released: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	p.front = newFront(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.Requests.Add(1)
		f, frac, delay := p.draw(r)
		switch f {
		case FaultReset:
			if p.odds.ResetAfter != nil && p.odds.ResetAfter(r) {
				// The registry took the request; the client never hears.
				rp.ServeHTTP(&discardWriter{h: http.Header{}}, r)
			}
			Reset(w)
		case Fault429, Fault503:
			w.Header().Set("Retry-After", "1")
			code := map[Injection]int{Fault429: http.StatusTooManyRequests, Fault503: http.StatusServiceUnavailable}[f]
			WriteError(w, code, "TOOMANYREQUESTS", "injected fault")
		case Fault500:
			WriteError(w, http.StatusInternalServerError, "UNKNOWN", "injected fault")
		case FaultSlowStart:
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
			rp.ServeHTTP(w, r)
		case FaultTruncate, FaultStall:
			rp.ServeHTTP(&faultWriter{ResponseWriter: w, r: r, frac: frac, stall: f == FaultStall, released: p.released}, r)
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	return p, nil
}

func (p *SeededFaultProxy) draw(r *http.Request) (Injection, float64, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || (p.odds.Spare != nil && p.odds.Spare(r)) {
		return NoFault, 0, 0
	}
	x, frac, d := p.rng.Float64(), p.rng.Float64(), p.rng.Float64()
	o := p.odds
	f := NoFault
	for _, c := range []struct {
		f Injection
		p float64
	}{{FaultReset, o.Reset}, {FaultTruncate, o.Truncate}, {FaultStall, o.Stall}, {Fault429, o.TooMany}, {Fault503, o.Unavailable}, {Fault500, o.Internal}, {FaultSlowStart, o.Slow}} {
		if x < c.p {
			f = c.f
			break
		}
		x -= c.p
	}
	// A body fault needs a body.
	if (f == FaultTruncate || f == FaultStall) && r.Method != http.MethodGet {
		f = NoFault
	}
	p.injected[f]++
	if f != NoFault {
		p.log = append(p.log, r.Method+" "+r.URL.RequestURI()+": "+f.String())
	}
	return f, frac, time.Duration(d * float64(o.SlowStart))
}

// Stop ends the faults: every later request passes, and stalled bodies
// are cut now.
func (p *SeededFaultProxy) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.stopped = true
		close(p.released)
	}
}

// Injected counts the faults drawn so far, by name.
func (p *SeededFaultProxy) Injected() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[string]int{}
	for f := Injection(1); f < numFaults; f++ {
		m[f.String()] = p.injected[f]
	}
	return m
}

// Log is every faulted request so far, "METHOD path: fault", in order.
func (p *SeededFaultProxy) Log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// faultWriter cuts (or stalls) a body at frac of its Content-Length (of
// 64 KiB when it has none).
type faultWriter struct {
	http.ResponseWriter
	r        *http.Request
	frac     float64
	stall    bool
	released chan struct{}
	limit    int64
	n        int64
	started  bool
}

func (f *faultWriter) WriteHeader(code int) {
	if !f.started {
		f.started = true
		size, err := strconv.ParseInt(f.Header().Get("Content-Length"), 10, 64)
		if err != nil || size <= 0 {
			size = 64 << 10
		}
		f.limit = int64(f.frac * float64(size))
	}
	f.ResponseWriter.WriteHeader(code)
}

func (f *faultWriter) Write(b []byte) (int, error) {
	if !f.started {
		f.WriteHeader(http.StatusOK)
	}
	cut := f.n+int64(len(b)) > f.limit
	if cut {
		b = b[:f.limit-f.n]
	}
	n, err := f.ResponseWriter.Write(b)
	f.n += int64(n)
	if err != nil || !cut {
		return n, err
	}
	f.Flush()
	if f.stall {
		select {
		case <-f.r.Context().Done():
		case <-f.released:
		}
	}
	return n, cutError{}
}

func (f *faultWriter) Flush() {
	if fl, ok := f.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

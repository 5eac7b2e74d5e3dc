package hostile

import (
	"math/rand/v2"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
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
	FaultCorrupt             // a blob GET's body: its bytes inverted up to a random point, then stalled (a hostile registry cut off mid-blob)
	numFaults
)

var faultNames = [...]string{"none", "reset", "truncate", "stall", "429", "503", "500", "slow-start", "corrupt"}

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
	// Corrupt is the probability of FaultCorrupt, drawn only for the GETs
	// Corruptible accepts (none when it is nil).
	Corrupt     float64
	Corruptible func(*http.Request) bool
}

// CorruptStall is one body FaultCorrupt stalled: Path is the blob's URL
// path, and [From, End) the bytes of the blob it sent inverted.
type CorruptStall struct {
	Path      string
	From, End int64
}

// SeededFaultProxy is a reverse proxy in front of a real registry that
// draws a fault for each request from a seeded generator (the fault
// campaign). The seed fixes the sequence of draws; which request
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
	stalls   []CorruptStall
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
		case FaultCorrupt:
			from := rangeStart(r)
			rp.ServeHTTP(&faultWriter{ResponseWriter: w, r: r, frac: frac, stall: true, corrupt: true, released: p.released,
				stalled: func(n int64) {
					p.mu.Lock()
					p.stalls = append(p.stalls, CorruptStall{Path: r.URL.Path, From: from, End: from + n})
					p.mu.Unlock()
				}}, r)
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
	}{{FaultReset, o.Reset}, {FaultTruncate, o.Truncate}, {FaultStall, o.Stall}, {Fault429, o.TooMany}, {Fault503, o.Unavailable}, {Fault500, o.Internal}, {FaultSlowStart, o.Slow},
		// Last, so that odds without it draw as they always did.
		{FaultCorrupt, o.Corrupt}} {
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
	if f == FaultCorrupt && (r.Method != http.MethodGet || o.Corruptible == nil || !o.Corruptible(r)) {
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

// CorruptStalls are the bodies FaultCorrupt has stalled so far, in order.
func (p *SeededFaultProxy) CorruptStalls() []CorruptStall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]CorruptStall(nil), p.stalls...)
}

// rangeStart is the first byte a GET's `Range: bytes=N-` asks for, else 0.
func rangeStart(r *http.Request) int64 {
	v, ok := strings.CutPrefix(r.Header.Get("Range"), "bytes=")
	if !ok {
		return 0
	}
	first, _, _ := strings.Cut(v, "-")
	n, err := strconv.ParseInt(first, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Log is every faulted request so far, "METHOD path: fault", in order.
func (p *SeededFaultProxy) Log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

// faultWriter cuts (or stalls) a body at frac of its Content-Length (of
// 64 KiB when it has none). With corrupt, the bytes it lets through are
// inverted, at least one and never the whole body, and stalled is told how
// many once they are sent.
type faultWriter struct {
	http.ResponseWriter
	r        *http.Request
	frac     float64
	stall    bool
	corrupt  bool
	stalled  func(n int64)
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
		if f.corrupt {
			f.limit = max(1, min(f.limit, size-1))
		}
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
	if f.corrupt {
		inv := make([]byte, len(b))
		for i, x := range b {
			inv[i] = ^x
		}
		b = inv
	}
	n, err := f.ResponseWriter.Write(b)
	f.n += int64(n)
	if err != nil || !cut {
		return n, err
	}
	f.Flush()
	if f.stalled != nil {
		f.stalled(f.n)
	}
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

package registry

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingObserver keeps what a Service reports.
type recordingObserver struct {
	mu       sync.Mutex
	requests []observedRequest
	hits     map[string]int
	misses   map[string]int
}

type observedRequest struct {
	host, method string
	status       int
	outcome      string
}

func newRecordingObserver() *recordingObserver {
	return &recordingObserver{hits: map[string]int{}, misses: map[string]int{}}
}

func (o *recordingObserver) RegistryRequest(host, method string, status int, outcome string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = append(o.requests, observedRequest{host, method, status, outcome})
}

func (o *recordingObserver) CacheLookup(cache string, hit bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if hit {
		o.hits[cache]++
	} else {
		o.misses[cache]++
	}
}

func (o *recordingObserver) take() (reqs []observedRequest, hits, misses map[string]int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	reqs, hits, misses = o.requests, o.hits, o.misses
	o.requests, o.hits, o.misses = nil, map[string]int{}, map[string]int{}
	return reqs, hits, misses
}

// Every request the registry receives is reported once, with its host,
// method, status and outcome; the caches report hits where the round-trip
// budget says no request was needed.
func TestObserverSeesEveryRequestAndCacheLookup(t *testing.T) {
	f := newFakeRegistry(t)
	f.tokenAuth = true
	f.addImage("team/app", "1.4", "linux", "amd64", "")
	obs := newRecordingObserver()
	s := testService(t, ServiceOptions{Observer: obs})
	ctx := context.Background()
	name := f.host() + "/team/app:1.4"

	// Cold: the tag is not warm, the token not cached, the content not cached.
	img, err := s.Inspect(ctx, InspectRequest{Name: name, Platform: linuxAmd64()})
	if err != nil {
		t.Fatal(err)
	}
	served := f.reset()
	reqs, hits, misses := obs.take()
	if len(reqs) != len(served) {
		t.Fatalf("cold: observed %d requests %v, the registry served %d: %v", len(reqs), reqs, len(served), served)
	}
	var challenged bool
	for i, r := range reqs {
		if r.host != f.host() {
			t.Errorf("request %d: host %q, want %q", i, r.host, f.host())
		}
		if want := strings.SplitN(served[i], " ", 2)[0]; r.method != want {
			t.Errorf("request %d: method %q, the registry saw %q", i, r.method, served[i])
		}
		switch {
		case r.status == 401 && r.outcome == OutcomeHTTPError:
			challenged = true
		case r.status >= 200 && r.status < 300 && r.outcome == OutcomeOK:
		default:
			t.Errorf("request %d: status %d outcome %q", i, r.status, r.outcome)
		}
	}
	if !challenged {
		t.Errorf("cold token-protected inspect: no 401 challenge observed: %v", reqs)
	}
	if hits[CacheTag] != 0 || misses[CacheTag] != 1 {
		t.Errorf("cold tag: hits %d misses %d, want 0 and 1", hits[CacheTag], misses[CacheTag])
	}
	if misses[CacheDigest] == 0 || hits[CacheDigest] != 0 {
		t.Errorf("cold content: hits %d misses %d, want only misses", hits[CacheDigest], misses[CacheDigest])
	}

	// Warm: one HEAD; the tag is warm, the token and the documents cached.
	if _, err := s.Inspect(ctx, InspectRequest{Name: name, Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	served = f.reset()
	reqs, hits, misses = obs.take()
	if len(served) != 1 || len(reqs) != 1 || reqs[0].method != "HEAD" || reqs[0].outcome != OutcomeOK {
		t.Errorf("warm: observed %v, the registry served %v", reqs, served)
	}
	if hits[CacheTag] != 1 || misses[CacheTag] != 0 {
		t.Errorf("warm tag: hits %d misses %d, want 1 and 0", hits[CacheTag], misses[CacheTag])
	}
	if hits[CacheToken] == 0 || misses[CacheToken] != 0 {
		t.Errorf("warm token: hits %d misses %d, want only hits", hits[CacheToken], misses[CacheToken])
	}
	if hits[CacheDigest] == 0 || misses[CacheDigest] != 0 {
		t.Errorf("warm content: hits %d misses %d, want only hits", hits[CacheDigest], misses[CacheDigest])
	}

	// A digest already read: no request, a content hit, no tag look-up.
	if _, err := s.Inspect(ctx, InspectRequest{Name: f.host() + "/team/app@" + img.Descriptor.Digest.String(), Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	reqs, hits, misses = obs.take()
	if len(reqs) != 0 || hits[CacheTag]+misses[CacheTag] != 0 || hits[CacheDigest] == 0 {
		t.Errorf("cached digest: requests %v, tag %d/%d, content hits %d", reqs, hits[CacheTag], misses[CacheTag], hits[CacheDigest])
	}
}

// A registry that is not there is a network error; a caller that gives up
// is canceled, not a network error.
func TestObserverOutcomesWithoutAnAnswer(t *testing.T) {
	// A server that reads what each connection sends first (a TLS
	// ClientHello, an HTTP request) and closes it without a word; reading
	// first makes the close a FIN, not a reset of unread data.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Read(make([]byte, 64<<10))
			c.Close()
		}
	}()
	host := l.Addr().String()
	obs := newRecordingObserver()
	s := testService(t, ServiceOptions{Observer: obs})
	if _, err := s.Inspect(context.Background(), InspectRequest{Name: host + "/team/app:1", Platform: linuxAmd64()}); err == nil {
		t.Fatal("inspect of a registry that closes every connection succeeded")
	}
	reqs, _, _ := obs.take()
	if len(reqs) == 0 {
		t.Fatal("no request observed")
	}
	for _, r := range reqs {
		if r.outcome != OutcomeNetworkError || r.status != 0 || r.host != host {
			t.Errorf("connection closed: %+v, want network_error without a status", r)
		}
	}

	g := newFakeRegistry(t)
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	g.hook = func(_ http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/v2/" {
			return false // the scheme probe's ping (endpoints.go): answered
		}
		cancel() // the client gives up while the registry holds the answer
		<-release
		return true
	}
	// FindImage runs under the caller's context (Inspect shares a flight
	// detached from each caller).
	if _, err := findImage(ctx, s, g.host()+"/team/app:1", Credentials{}); err == nil {
		t.Fatal("canceled resolve succeeded")
	}
	reqs, _, _ = obs.take()
	// Before it, the scheme probe's ping (answered, or given up on when
	// slower than the probe).
	if len(reqs) < 1 || len(reqs) > 2 || reqs[len(reqs)-1].outcome != OutcomeCanceled {
		t.Errorf("canceled: %+v, want (the ping and) one canceled request", reqs)
	}
}

// A reload builds new per-host set-ups: they report to the same observer
// (they were built without one at first, so every request after a SIGHUP
// went uncounted).
func TestObserverSurvivesReload(t *testing.T) {
	f := newFakeRegistry(t)
	f.addImage("team/app", "1", "linux", "amd64", "")
	obs := newRecordingObserver()
	opts := ServiceOptions{Observer: obs}
	s := testService(t, opts)
	if _, err := s.Reload(opts); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Inspect(ctx, InspectRequest{Name: f.host() + "/team/app:1", Platform: linuxAmd64()}); err != nil {
		t.Fatal(err)
	}
	served := f.reset()
	if reqs, _, _ := obs.take(); len(served) == 0 || len(reqs) != len(served) {
		t.Fatalf("after a reload: observed %d requests, the registry served %d", len(reqs), len(served))
	}
}

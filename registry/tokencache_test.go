package registry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"
)

// The first caller's context ending does not end the shared fetch: a caller
// that asks for the same token while it runs gets it, without a second
// fetch; the caller that left gets an error naming the registry.
func TestTokenFetchOutlivesTheCallerThatStartedIt(t *testing.T) {
	c := newTokenCache(nil, time.Minute)
	joined := make(chan string, 2)
	c.flight.joined = func(key string) { joined <- key }
	started, release := make(chan struct{}), make(chan struct{})
	var fetches atomic.Int32
	fetch := func(ctx context.Context) (string, error) {
		fetches.Add(1)
		close(started)
		select {
		case <-release:
			return "tok", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	firstCtx, leave := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.Set(firstCtx, "reg.example:5000", auth.SchemeBearer, "repository:a:pull", fetch)
		first <- err
	}()
	<-started
	<-joined
	leave()
	err := <-first
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "registry reg.example:5000") {
		t.Errorf("the caller that left: %v, want context.Canceled naming the registry", err)
	}
	// The fetch is still running: a second caller joins it.
	second := make(chan string, 1)
	go func() {
		tok, err := c.Set(context.Background(), "reg.example:5000", auth.SchemeBearer, "repository:a:pull", func(context.Context) (string, error) {
			t.Error("a second fetch was started")
			return "", errors.New("second fetch")
		})
		if err != nil {
			t.Error(err)
		}
		second <- tok
	}()
	<-joined // the second caller is in the flight, which is still running
	close(release)
	if tok := <-second; tok != "tok" {
		t.Errorf("second caller got %q", tok)
	}
	if got, err := c.GetToken(context.Background(), "reg.example:5000", auth.SchemeBearer, "repository:a:pull"); err != nil || got != "tok" {
		t.Errorf("cached: %q %v", got, err)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches", n)
	}
}

// The shared fetch has a bound of its own.
func TestTokenFetchHasItsOwnTimeout(t *testing.T) {
	c := newTokenCache(nil, 50*time.Millisecond)
	_, err := c.Set(context.Background(), "reg.example", auth.SchemeBearer, "k", func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the fetch's own deadline", err)
	}
}

// Through the whole client: when the first of two concurrent inspects of
// one repository gives up, the other still gets its answer, and the token
// server sees one request.
func TestConcurrentInspectsShareATokenPastTheFirstCallersDeparture(t *testing.T) {
	f := newFakeRegistry(t)
	f.tokenAuth = true
	f.addImage("team/app", "1", "linux", "amd64", "")
	held, release := make(chan struct{}, 4), make(chan struct{})
	var tokens atomic.Int32
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/token" {
			tokens.Add(1)
			held <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		return false
	}
	s := testService(t, ServiceOptions{})
	n := mustRepo(t, s, f.host()+"/team/app")
	firstCtx, leave := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := n.Resolve(firstCtx, "1")
		first <- err
	}()
	<-held
	second := make(chan error, 1)
	go func() {
		_, err := mustRepo(t, s, f.host()+"/team/app").Resolve(context.Background(), "1")
		second <- err
	}()
	leave()
	if err := <-first; err == nil {
		t.Error("the caller that left got an answer")
	}
	close(release)
	if err := <-second; err != nil {
		t.Errorf("the caller that stayed: %v", err)
	}
	if n := tokens.Load(); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
}

// A token server that answers more than maxTokenBody served something
// malformed: ErrUpstream (502), as docs/architecture.md promises, not an
// unclassified error (500). Issue 19, item 9.
func TestOversizedTokenResponseIsUpstreamError(t *testing.T) {
	f := newFakeRegistry(t)
	f.tokenAuth = true
	f.tokenPad = maxTokenBody + 1
	f.addImage("team/app", "1.0", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	_, err := s.Inspect(t.Context(), InspectRequest{Name: f.host() + "/team/app:1.0", Platform: linuxAmd64()})
	if !errors.Is(err, ErrUpstream) {
		t.Fatalf("oversized token response: %v, want ErrUpstream (502)", err)
	}
}

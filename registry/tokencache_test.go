package registry

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/wharfproject/wharf/registry/transport"
)

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
		_, err := n.Descriptor(firstCtx, "1")
		first <- err
	}()
	<-held
	second := make(chan error, 1)
	go func() {
		_, err := mustRepo(t, s, f.host()+"/team/app").Descriptor(context.Background(), "1")
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
	f.tokenPad = transport.MaxTokenBody + 1
	f.addImage("team/app", "1.0", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	_, err := s.Inspect(t.Context(), InspectRequest{Name: f.host() + "/team/app:1.0", Platform: linuxAmd64()})
	if !errors.Is(err, ErrUpstream) {
		t.Fatalf("oversized token response: %v, want ErrUpstream (502)", err)
	}
}

package transport

import (
	"context"
	"errors"
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

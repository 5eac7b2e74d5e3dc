package transport

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The first caller's context ending does not end the shared fetch: a caller
// that asks for the same token while it runs gets it, without a second
// fetch; the caller that left gets an error naming the registry.
func TestTokenFetchOutlivesTheCallerThatStartedIt(t *testing.T) {
	c := newTokenCache(time.Minute, nil)
	joined := make(chan string, 2)
	c.flight.joined = func(key string) { joined <- key }
	started, release := make(chan struct{}), make(chan struct{})
	var fetches atomic.Int32
	fetch := func(ctx context.Context) (fetched, error) {
		fetches.Add(1)
		close(started)
		select {
		case <-release:
			return fetched{token: "tok"}, nil
		case <-ctx.Done():
			return fetched{}, ctx.Err()
		}
	}
	firstCtx, leave := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := c.fetch(firstCtx, "reg.example:5000", schemeBearer, "repository:a:pull", true, fetch)
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
		tok, err := c.fetch(context.Background(), "reg.example:5000", schemeBearer, "repository:a:pull", true, func(context.Context) (fetched, error) {
			t.Error("a second fetch was started")
			return fetched{}, errors.New("second fetch")
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
	if got, ok := c.get("reg.example:5000", schemeBearer, "repository:a:pull"); !ok || got != "tok" {
		t.Errorf("cached: %q %v", got, ok)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d fetches", n)
	}
}

// The shared fetch has a bound of its own.
func TestTokenFetchHasItsOwnTimeout(t *testing.T) {
	c := newTokenCache(50*time.Millisecond, nil)
	_, err := c.fetch(context.Background(), "reg.example", schemeBearer, "k", true, func(ctx context.Context) (fetched, error) {
		<-ctx.Done()
		return fetched{}, ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the fetch's own deadline", err)
	}
}

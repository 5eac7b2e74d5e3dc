package contents

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

func runtimeGosched() { runtime.Gosched() }

// A caller leaving does not cancel the build another waits on; the last
// one leaving does.
func TestFlightCancelsOnlyWhenEveryCallerLeft(t *testing.T) {
	var f flight[int]
	started := make(chan struct{})
	release := make(chan struct{})
	stopped := make(chan error, 1)
	fn := func(ctx context.Context) (int, error) {
		close(started)
		select {
		case <-release:
			return 42, nil
		case <-ctx.Done():
			stopped <- ctx.Err()
			return 0, ctx.Err()
		}
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	res1 := make(chan error, 1)
	go func() { _, err := f.do(ctx1, "k", fn); res1 <- err }()
	<-started
	res2 := make(chan int, 1)
	go func() { v, _ := f.do(context.Background(), "k", fn); res2 <- v }()
	// The second caller joins before the first leaves.
	for {
		f.mu.Lock()
		n := f.calls["k"].waiters
		f.mu.Unlock()
		if n == 2 {
			break
		}
		runtime.Gosched()
	}
	cancel1()
	if err := <-res1; !errors.Is(err, context.Canceled) {
		t.Fatalf("the leaving caller: %v", err)
	}
	close(release)
	if v := <-res2; v != 42 {
		t.Fatalf("the staying caller got %d", v)
	}

	// Now alone: leaving cancels the build.
	started2 := make(chan struct{})
	ctx3, cancel3 := context.WithCancel(context.Background())
	res3 := make(chan error, 1)
	go func() {
		_, err := f.do(ctx3, "k2", func(ctx context.Context) (int, error) {
			close(started2)
			<-ctx.Done()
			stopped <- ctx.Err()
			return 0, ctx.Err()
		})
		res3 <- err
	}()
	<-started2
	cancel3()
	<-res3
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("the build was not cancelled: %v", err)
	}
}

package check

import (
	"context"
	"sync"
	"time"

	"github.com/wharfproject/wharf/api/types"
)

// Scrubber runs one scrub at a time in the background and keeps the last
// finished one's report. The zero value is ready.
type Scrubber struct {
	mu sync.Mutex
	// running is closed when the scrub under way ends (nil: none is).
	running chan struct{}
	last    *types.ScrubReport
	cancel  context.CancelFunc
	closed  bool
	wg      sync.WaitGroup
}

// Start runs scrub in the background (Run) and returns at once; done,
// when not nil, is called with its report when it ends, before a Wait for
// it returns. A scrub already under way, or a stopped Scrubber, starts
// nothing (done is not called).
func (s *Scrubber) Start(scrub func(context.Context) *types.ScrubReport, done func(*types.ScrubReport)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil || s.closed {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	running := make(chan struct{})
	s.running, s.cancel = running, cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		rep := s.Run(ctx, scrub)
		cancel()
		// done (the daemon's log and /info warnings) before a waiting
		// check returns: what it reports has been told.
		if done != nil {
			done(rep)
		}
		s.mu.Lock()
		s.running, s.cancel = nil, nil
		s.mu.Unlock()
		close(running)
	}()
}

// Run runs scrub now, keeps its report (Finished now) as the last one,
// and returns it.
func (s *Scrubber) Run(ctx context.Context, scrub func(context.Context) *types.ScrubReport) *types.ScrubReport {
	rep := scrub(ctx)
	rep.Finished = time.Now()
	s.mu.Lock()
	s.last = rep
	s.mu.Unlock()
	return rep
}

// Last is a copy of the last finished scrub's report; nil when none has
// finished.
func (s *Scrubber) Last() *types.ScrubReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return nil
	}
	rep := *s.last
	rep.Collected = append([]string{}, rep.Collected...)
	rep.Problems = append([]types.CheckProblem{}, rep.Problems...)
	return &rep
}

// Wait waits for the scrub under way, if any, to end.
func (s *Scrubber) Wait(ctx context.Context) error {
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if running == nil {
		return nil
	}
	select {
	case <-running:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop stops a scrub under way and waits for it, and starts no other.
func (s *Scrubber) Stop() {
	s.mu.Lock()
	s.closed = true
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

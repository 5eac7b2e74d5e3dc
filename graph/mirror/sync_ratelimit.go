package mirror

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/wharfproject/wharf/api/types"
)

// waitRateLimit pauses while host's last answer said fewer than the floor's
// requests remain, until its window has passed (one minute when it said
// no window), and says so once per pause. One image waits per host; the
// others wait behind it and then look again.
func (r *syncRun) waitRateLimit(ctx context.Context, host string) error {
	floor := r.opts.RateLimitFloor
	if floor <= 0 {
		return nil
	}
	r.pmu.Lock()
	m, ok := r.pauses[host]
	if !ok {
		m = &sync.Mutex{}
		r.pauses[host] = m
	}
	r.pmu.Unlock()
	m.Lock()
	defer m.Unlock()
	for {
		until, ok := r.pauseUntil(host, floor)
		if !ok {
			return nil
		}
		r.emit(types.SyncEvent{Status: types.SyncPaused, Registry: host, Until: until.UTC().Format(time.RFC3339)})
		t := time.NewTimer(time.Until(until))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		// The state is what the last answer said: the pause is over when
		// its window is, and the next answer says the new state. Until
		// then, go on.
		return nil
	}
}

// defaultRateLimitPause is the pause when a registry said a count but no
// window: one minute, then the next answer says again.
const defaultRateLimitPause = time.Minute

// pauseUntil says whether host is under the floor now and until when.
func (r *syncRun) pauseUntil(host string, floor int64) (time.Time, bool) {
	for _, rl := range r.m.dist.RateLimits() {
		if !strings.EqualFold(rl.Host, host) || rl.Limit == 0 && rl.Remaining == 0 && rl.Window == 0 {
			continue
		}
		if rl.Remaining >= floor {
			return time.Time{}, false
		}
		w := rl.Window
		if w <= 0 {
			w = defaultRateLimitPause
		}
		until := rl.Seen.Add(w)
		if !until.After(time.Now()) {
			return time.Time{}, false
		}
		return until, true
	}
	return time.Time{}, false
}

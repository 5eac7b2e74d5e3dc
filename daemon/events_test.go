package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"

	"github.com/wharfproject/wharf/api/types"
)

// clockEvents returns an Events whose clock the test moves.
func clockEvents(start time.Time) (*Events, *time.Time) {
	e := NewEvents()
	now := start
	e.now = func() time.Time { return now }
	return e, &now
}

func TestEventsSinceUntilAndFilters(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	e, now := clockEvents(t0)
	ctx := context.Background()
	e.LogImageEvent(ctx, "sha256:aaa", events.ActionPull, map[string]string{"name": "busybox:latest", "maintainer": "me"})
	*now = t0.Add(10 * time.Second)
	e.LogImageEvent(ctx, "sha256:bbb", events.ActionTag, map[string]string{"name": "127.0.0.1:5000/retag:2.0"})
	*now = t0.Add(20 * time.Second)
	e.LogImageEvent(ctx, "sha256:aaa", events.ActionDelete, map[string]string{"name": "busybox:latest"})
	*now = t0.Add(30 * time.Second)

	f := func(kv ...string) types.Filters {
		out := types.Filters{}
		for i := 0; i < len(kv); i += 2 {
			if out[kv[i]] == nil {
				out[kv[i]] = map[string]bool{}
			}
			out[kv[i]][kv[i+1]] = true
		}
		return out
	}
	tests := []struct {
		name         string
		since, until time.Time
		filters      types.Filters
		want         []events.Action
	}{
		{"all", time.Time{}, time.Time{}, f(), []events.Action{"pull", "tag", "delete"}},
		{"since", t0.Add(10 * time.Second), time.Time{}, f(), []events.Action{"tag", "delete"}},
		{"since until", t0.Add(5 * time.Second), t0.Add(15 * time.Second), f(), []events.Action{"tag"}},
		{"type image", time.Time{}, time.Time{}, f("type", "image"), []events.Action{"pull", "tag", "delete"}},
		{"type container", time.Time{}, time.Time{}, f("type", "container"), nil},
		{"event", time.Time{}, time.Time{}, f("event", "pull", "event", "delete"), []events.Action{"pull", "delete"}},
		{"image by name without tag", time.Time{}, time.Time{}, f("image", "busybox"), []events.Action{"pull", "delete"}},
		{"image by id", time.Time{}, time.Time{}, f("image", "sha256:bbb"), []events.Action{"tag"}},
		{"image by repo with port", time.Time{}, time.Time{}, f("image", "127.0.0.1:5000/retag"), []events.Action{"tag"}},
		{"label key", time.Time{}, time.Time{}, f("label", "maintainer"), []events.Action{"pull"}},
		{"label key=value", time.Time{}, time.Time{}, f("label", "maintainer=you"), nil},
		{"scope", time.Time{}, time.Time{}, f("scope", "swarm"), nil},
		{"and", time.Time{}, time.Time{}, f("image", "busybox", "event", "delete"), []events.Action{"delete"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			past, _, cancel := e.SubscribeEvents(tc.since, tc.until, tc.filters)
			defer cancel()
			var got []events.Action
			for _, ev := range past {
				got = append(got, ev.Action)
				if ev.Status != string(ev.Action) || ev.ID != ev.Actor.ID || ev.Scope != "local" || ev.TimeNano == 0 || ev.Time == 0 {
					t.Errorf("event fields: %+v", ev)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestEventsLiveAndClose(t *testing.T) {
	e := NewEvents()
	_, live, cancel := e.SubscribeEvents(time.Time{}, time.Time{}, types.Filters{"event": {"push": true}})
	defer cancel()
	if _, none, _ := e.SubscribeEvents(time.Time{}, time.Now().Add(-time.Hour), nil); none != nil {
		t.Error("a past until must not subscribe")
	}
	e.LogImageEvent(context.Background(), "r/x:1", events.ActionTag, nil)
	e.LogImageEvent(context.Background(), "r/x:1", events.ActionPush, map[string]string{"name": "r/x"})
	got, _ := receive(t, live)
	if got.Action != events.ActionPush || got.Actor.Attributes["name"] != "r/x" {
		t.Errorf("live %+v", got)
	}
	if e.Subscribers() != 1 {
		t.Errorf("subscribers %d", e.Subscribers())
	}
	e.Close()
	if _, ok := receive(t, live); ok {
		t.Error("Close must close live channels")
	}
	cancel() // after Close: must not panic
	e.LogImageEvent(context.Background(), "r/x:1", events.ActionPush, nil)
}

// A subscriber that reads nothing gets its backlog, and publishing to it
// returns: the surplus is dropped, no image operation waits for it.
func TestEventsSlowSubscriberDoesNotBlock(t *testing.T) {
	e := NewEvents()
	// No deferred cancel: it takes the lock that a blocked publish holds,
	// and would turn the failure below back into a hang.
	_, live, cancel := e.SubscribeEvents(time.Time{}, time.Time{}, nil)
	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := 0; i < subscriberBuffer*2; i++ {
			e.LogImageEvent(context.Background(), "x", events.ActionPull, nil)
		}
	}()
	select {
	case <-published:
	case <-time.After(eventWait):
		t.Fatalf("publishing %d events to a subscriber that reads nothing had not returned after %s: a slow subscriber blocks the daemon", subscriberBuffer*2, eventWait)
	}
	if n := len(live); n != subscriberBuffer {
		t.Errorf("the slow subscriber's backlog holds %d events, want %d (the rest dropped)", n, subscriberBuffer)
	}
	cancel()
}

// eventWait bounds a wait for something that takes microseconds: running
// out of it is a failure, never a slow machine.
const eventWait = 10 * time.Second

// receive is the next value on ch, failing the test (instead of hanging
// it) when none comes within eventWait; ok is false when ch is closed.
func receive(t *testing.T, ch <-chan types.EventMessage) (ev types.EventMessage, ok bool) {
	t.Helper()
	select {
	case ev, ok = <-ch:
		return ev, ok
	case <-time.After(eventWait):
		t.Fatalf("no event and no close on the live channel within %s", eventWait)
		return ev, false
	}
}

func TestEventsRingKeepsTheLastOnes(t *testing.T) {
	e := NewEvents()
	for i := 0; i < eventsHistory+10; i++ {
		e.Log(events.ImageEventType, events.ActionPull, string(rune('a'+i%26)), nil)
	}
	past, _, cancel := e.SubscribeEvents(time.Time{}, time.Now().Add(-time.Nanosecond+time.Hour), nil)
	cancel()
	if len(past) != eventsHistory {
		t.Fatalf("history %d, want %d", len(past), eventsHistory)
	}
	if past[0].Actor.ID != string(rune('a'+10%26)) {
		t.Errorf("oldest kept %q", past[0].Actor.ID)
	}
}

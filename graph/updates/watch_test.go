package updates

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

// scriptedStore answers each round with the next results of its script
// (the last one again once the script is done) and tells rounds when a
// round has started.
type scriptedStore struct {
	script  [][]types.RemoteCheckResult
	n       int
	started chan struct{}
	// blockFrom: rounds from this one on (counted from 1) wait for their
	// context (shutdown); 0 never.
	blockFrom int
	skipped   []string
}

func (s *scriptedStore) CheckRemoteSkipping(ctx context.Context, _ types.RemoteCheckOptions, skip func(string) bool, emit func(types.RemoteCheckResult) error) error {
	if s.started != nil {
		s.started <- struct{}{}
	}
	s.n++
	if s.blockFrom > 0 && s.n >= s.blockFrom {
		<-ctx.Done()
		return ctx.Err()
	}
	rs := s.script[min(s.n-1, len(s.script)-1)]
	for _, r := range rs {
		if skip(registryOf(r.Repository)) {
			s.skipped = append(s.skipped, r.Repository)
			continue
		}
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

func quietLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

func yes() *bool { b := true; return &b }

// res is a result of the check for 127.0.0.1:5000/app:<tag>.
func res(tag, status, remote string) types.RemoteCheckResult {
	return types.RemoteCheckResult{Repository: "127.0.0.1:5000/app", Tag: tag, ID: "sha256:1", LocalDigest: "sha256:aa", RemoteStatus: status, RemoteDigest: remote}
}

// recordedEvents is an EventLog that keeps what it is given.
type recordedEvents struct {
	mu   sync.Mutex
	list []recordedEvent
}

type recordedEvent struct {
	typ    events.Type
	action events.Action
	attrs  map[string]string
}

// NewEvents is an empty event log.
func NewEvents() *recordedEvents { return &recordedEvents{} }

func (e *recordedEvents) Log(typ events.Type, action events.Action, _ string, attrs map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, recordedEvent{typ, action, attrs})
}

// actions lists the image events logged, as "action tag[/cleared]".
func actions(e *recordedEvents) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.list {
		if ev.typ != events.ImageEventType {
			continue
		}
		s := string(ev.action) + " " + ev.attrs["name"]
		if c := ev.attrs["cleared"]; c != "" {
			s += "/" + c
		}
		out = append(out, s)
	}
	return out
}

// TestWatchReportsChangesOnly: each change of a tag's state is one event;
// a round that changes nothing logs nothing; errors change nothing; a
// first round is silent about what is fine.
func TestWatchReportsChangesOnly(t *testing.T) {
	v := func(r types.RemoteCheckResult, patch, minor string) types.RemoteCheckResult {
		r.VersionTag, r.NewerPatch, r.NewerMinor = yes(), patch, minor
		return r
	}
	base := func(r types.RemoteCheckResult, status, cur string) types.RemoteCheckResult {
		r.BaseStatus, r.BaseCurrentDigest = status, cur
		return r
	}
	platform := func(r types.RemoteCheckResult, changed bool) types.RemoteCheckResult {
		r.Platform, r.PlatformChanged = "linux/amd64", &changed
		return r
	}
	errRes := res("1.0", types.RemoteError, "")
	errRes.NewerError = "not asked"
	rounds := []struct {
		results []types.RemoteCheckResult
		want    []string
	}{
		{[]types.RemoteCheckResult{v(res("1.0", "current", "sha256:aa"), "", ""), res("latest", "current", "sha256:aa")}, nil},
		{[]types.RemoteCheckResult{v(res("1.0", "current", "sha256:aa"), "", ""), res("latest", "current", "sha256:aa")}, nil},
		{[]types.RemoteCheckResult{v(res("1.0", "current", "sha256:aa"), "", ""), res("latest", "outdated", "sha256:bb")}, []string{"outdated 127.0.0.1:5000/app:latest"}},
		{[]types.RemoteCheckResult{v(res("1.0", "current", "sha256:aa"), "", ""), res("latest", "outdated", "sha256:bb")}, nil},
		// moved again while outdated: a new state, one more event
		{[]types.RemoteCheckResult{v(res("1.0", "current", "sha256:aa"), "", ""), res("latest", "outdated", "sha256:cc")}, []string{"outdated 127.0.0.1:5000/app:latest"}},
		// an error keeps the state: no current, no event
		{[]types.RemoteCheckResult{errRes, res("latest", types.RemoteError, "")}, nil},
		{[]types.RemoteCheckResult{v(res("1.0", "current", "sha256:aa"), "", "1.1"), res("latest", "current", "sha256:aa")},
			[]string{"newer-version 127.0.0.1:5000/app:1.0", "current 127.0.0.1:5000/app:latest/outdated"}},
		{[]types.RemoteCheckResult{v(res("1.0", "current", "sha256:aa"), "", "1.2"), base(res("latest", "current", "sha256:aa"), types.BaseOutdated, "sha256:b2")},
			[]string{"newer-version 127.0.0.1:5000/app:1.0", "base-outdated 127.0.0.1:5000/app:latest"}},
		{[]types.RemoteCheckResult{v(res("1.0", "current", "sha256:aa"), "", ""), base(res("latest", "current", "sha256:aa"), types.BaseUnknown, "")}, []string{"current 127.0.0.1:5000/app:1.0/newer-version"}},
		{[]types.RemoteCheckResult{v(res("1.0", "current", "sha256:aa"), "", ""), base(res("latest", "current", "sha256:aa"), types.BaseCurrent, "sha256:b2")}, []string{"current 127.0.0.1:5000/app:latest/base-outdated"}},
		// An index where only another platform changed: no alarm.
		{[]types.RemoteCheckResult{platform(res("1.0", "outdated", "sha256:i2"), false)}, nil},
		{[]types.RemoteCheckResult{platform(res("1.0", "outdated", "sha256:i3"), true)}, []string{"outdated 127.0.0.1:5000/app:1.0"}},
		{[]types.RemoteCheckResult{platform(res("1.0", "outdated", "sha256:i4"), false)}, []string{"current 127.0.0.1:5000/app:1.0/outdated"}},
	}
	st := &scriptedStore{}
	for _, r := range rounds {
		st.script = append(st.script, r.results)
	}
	ev := NewEvents()
	w := NewWatcher(st, ev, nil, time.Hour, quietLog())
	var seen int
	for i, r := range rounds {
		w.Round(context.Background(), time.Hour)
		got := actions(ev)[seen:]
		seen += len(got)
		if !slices.Equal(got, r.want) {
			t.Fatalf("round %d: events %q, want %q", i, got, r.want)
		}
	}
	s := w.Sample()
	if s.Rounds != int64(len(rounds)) || len(s.Registries) != 1 || s.Registries[0].Outdated != 0 || s.Registries[0].LastSuccess == 0 {
		t.Fatalf("sample %+v", s)
	}
}

// TestWatchGaugesAndForgetting: the gauges count the tags in each state;
// a tag gone from the store is forgotten, one of a skipped registry kept.
func TestWatchGaugesAndForgetting(t *testing.T) {
	other := types.RemoteCheckResult{Repository: "127.0.0.2:5000/x", Tag: "1", RemoteStatus: "outdated", RemoteDigest: "sha256:b"}
	st := &scriptedStore{script: [][]types.RemoteCheckResult{
		{res("a", "outdated", "sha256:bb"), res("b", "outdated", "sha256:bb"), other},
		{res("a", "outdated", "sha256:bb"), other},
	}}
	backoffs := []HostBackoff{}
	w := NewWatcher(st, NewEvents(), func() []HostBackoff { return backoffs }, time.Hour, quietLog())
	w.Round(context.Background(), time.Hour)
	count := func() map[string]int {
		m := map[string]int{}
		for _, r := range w.Sample().Registries {
			m[r.Registry] = r.Outdated
		}
		return m
	}
	if got := count(); got["127.0.0.1:5000"] != 2 || got["127.0.0.2:5000"] != 1 {
		t.Fatalf("after round 1: %v", got)
	}
	now := time.Now()
	w.now = func() time.Time { return now }
	// The gate opens in 10 s; the registry said its limit resets in 30 s.
	backoffs = []HostBackoff{{Host: "127.0.0.2:5000", Until: now.Add(10 * time.Second), Resets: now.Add(30 * time.Second)}}
	w.Round(context.Background(), time.Hour)
	if got := count(); got["127.0.0.1:5000"] != 1 || got["127.0.0.2:5000"] != 1 {
		t.Fatalf("after round 2 (b removed, 127.0.0.2 backed off and kept): %v", got)
	}
	// The gate is open again (the registry layer lists it no more), but
	// the limit has not reset: still skipped.
	backoffs = nil
	now = now.Add(20 * time.Second)
	w.Round(context.Background(), time.Hour)
	if !slices.Equal(st.skipped, []string{"127.0.0.2:5000/x", "127.0.0.2:5000/x"}) {
		t.Fatalf("skipped %v", st.skipped)
	}
	// Past the reset: asked again.
	now = now.Add(11 * time.Second)
	w.Round(context.Background(), time.Hour)
	if len(st.skipped) != 2 {
		t.Fatalf("skipped %v after the reset", st.skipped)
	}
}

// TestWatchStopsAndReloads: rounds run on the interval; SetInterval(0)
// stops them; a round in progress ends with the context and run returns
// (no goroutine left behind).
func TestWatchStopsAndReloads(t *testing.T) {
	st := &scriptedStore{script: [][]types.RemoteCheckResult{{res("a", "current", "sha256:aa")}}, started: make(chan struct{}), blockFrom: 4}
	w := NewWatcher(st, NewEvents(), nil, 0, quietLog())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	select {
	case <-st.started:
		t.Fatal("a round ran with the interval off")
	case <-time.After(50 * time.Millisecond): // a bound on a negative, not synchronisation
	}
	w.SetInterval(time.Millisecond)
	for range 4 { // the 4th blocks until the context ends
		<-st.started
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	if r := w.Sample().Rounds; r != 3 {
		t.Fatalf("rounds %d, want 3 (the 4th canceled counts not)", r)
	}
}

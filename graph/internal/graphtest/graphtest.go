// Package graphtest is the test support the tests of graph, graph/archive
// and graph/distribution share: an event recorder, the platform test stores
// run on, a store opened quietly for a test, tar and gzip builders, a
// one-file import, blob writes under a lease and a progress-stream
// collector.
//
// Only tests import it. It imports graph/store, api/types and third-party
// modules, never graph, graph/archive or graph/distribution; graph/store's
// own (in-package) tests cannot import it, since it imports graph/store.
package graphtest

import (
	"context"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/events"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/graph/store"
)

// Event is one event an EventRecorder saw.
type Event struct {
	Actor  string
	Action events.Action
	Attrs  map[string]string
}

// EventRecorder records the image events a store logs; safe for
// concurrent use.
type EventRecorder struct {
	mu  sync.Mutex
	evs []Event
}

// LogImageEvent records one event.
func (r *EventRecorder) LogImageEvent(_ context.Context, actor string, action events.Action, attrs map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, Event{actor, action, attrs})
}

// Events is every event recorded so far, oldest first.
func (r *EventRecorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.evs...)
}

// Last is the newest event (the zero Event when there is none).
func (r *EventRecorder) Last() Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.evs) == 0 {
		return Event{}
	}
	return r.evs[len(r.evs)-1]
}

// Actions lists the recorded events' actions, oldest first.
func (r *EventRecorder) Actions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.evs {
		out = append(out, string(e.Action))
	}
	return out
}

// Platform is the platform test stores run on: linux/amd64.
func Platform() ocispec.Platform {
	return ocispec.Platform{OS: "linux", Architecture: "amd64"}
}

// QuietLogger logs errors only.
func QuietLogger() *logrus.Entry {
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	return logrus.NewEntry(log)
}

// OpenStore opens the store at root with a QuietLogger, closed when the
// test ends.
func OpenStore(t testing.TB, root string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Root: root, Logger: QuietLogger()})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

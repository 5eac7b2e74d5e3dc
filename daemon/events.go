package daemon

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"

	"github.com/wharfproject/wharf/api/types"
)

const (
	// eventsHistory is how many past events /events?since= can replay
	// (dockerd keeps 256; images events are rarer, 1024 covers hours).
	eventsHistory = 1024
	// subscriberBuffer is the backlog one /events client may have before
	// events for it are dropped, so a stuck client never blocks the daemon.
	subscriberBuffer = 256
)

// Events is the daemon's event log: a ring of past events plus live
// subscribers. It implements graph.EventLogger and server.EventsBackend.
type Events struct {
	mu     sync.Mutex
	ring   []types.EventMessage // oldest first once full: ring[next:] + ring[:next]
	next   int
	full   bool
	subs   map[*subscriber]struct{}
	closed bool
	now    func() time.Time
}

type subscriber struct {
	ch     chan types.EventMessage
	filter types.Filters
}

// NewEvents returns an empty event log.
func NewEvents() *Events {
	return &Events{
		ring: make([]types.EventMessage, eventsHistory),
		subs: map[*subscriber]struct{}{},
		now:  time.Now,
	}
}

// LogImageEvent implements graph.EventLogger.
func (e *Events) LogImageEvent(_ context.Context, actorID string, action events.Action, attrs map[string]string) {
	e.Log(events.ImageEventType, action, actorID, attrs)
}

// Log records an event in local scope with the current time.
func (e *Events) Log(typ events.Type, action events.Action, actorID string, attrs map[string]string) {
	t := e.now()
	a := make(map[string]string, len(attrs))
	for k, v := range attrs {
		a[k] = v
	}
	ev := types.EventMessage{
		Message: events.Message{
			Type:     typ,
			Action:   action,
			Actor:    events.Actor{ID: actorID, Attributes: a},
			Scope:    "local",
			Time:     t.Unix(),
			TimeNano: t.UnixNano(),
		},
	}
	if typ == events.ImageEventType || typ == events.ContainerEventType {
		// Legacy fields docker CLIs before v25 need.
		ev.Status, ev.ID = string(action), actorID
		if typ == events.ContainerEventType {
			ev.From = a["image"]
		}
	}
	e.publish(ev)
}

func (e *Events) publish(ev types.EventMessage) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.ring[e.next] = ev
	e.next = (e.next + 1) % len(e.ring)
	if e.next == 0 {
		e.full = true
	}
	for s := range e.subs {
		if !matchEvent(s.filter, ev) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			// The client is not reading; dropping beats blocking every
			// image operation of the daemon.
		}
	}
}

// SubscribeEvents implements server.EventsBackend: the past events in
// [since, until] matching f, and, unless until is in the past, a channel of
// the live ones (closed by cancel or Close).
func (e *Events) SubscribeEvents(since, until time.Time, f types.Filters) ([]types.EventMessage, <-chan types.EventMessage, func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var past []types.EventMessage
	for _, ev := range e.historyLocked() {
		tn := ev.TimeNano
		if !since.IsZero() && tn < since.UnixNano() {
			continue
		}
		if !until.IsZero() && tn > until.UnixNano() {
			continue
		}
		if matchEvent(f, ev) {
			past = append(past, ev)
		}
	}
	if e.closed || (!until.IsZero() && until.Before(e.now())) {
		return past, nil, func() {}
	}
	s := &subscriber{ch: make(chan types.EventMessage, subscriberBuffer), filter: f}
	e.subs[s] = struct{}{}
	var once sync.Once
	cancel := func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			if _, ok := e.subs[s]; ok {
				delete(e.subs, s)
				close(s.ch)
			}
		})
	}
	return past, s.ch, cancel
}

func (e *Events) historyLocked() []types.EventMessage {
	if !e.full {
		return append([]types.EventMessage(nil), e.ring[:e.next]...)
	}
	out := make([]types.EventMessage, 0, len(e.ring))
	out = append(out, e.ring[e.next:]...)
	return append(out, e.ring[:e.next]...)
}

// Subscribers is the number of live /events clients (NEventsListener).
func (e *Events) Subscribers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.subs)
}

// Close ends every subscription at once so that streaming /events requests
// do not hold up shutdown; later events are dropped.
func (e *Events) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for s := range e.subs {
		delete(e.subs, s)
		close(s.ch)
	}
}

// matchEvent applies dockerd's /events filter semantics: every key given
// must match (AND); several values of one key are alternatives (OR).
func matchEvent(f types.Filters, ev types.EventMessage) bool {
	if !exactMatch(f, "scope", ev.Scope) || !exactMatch(f, "type", string(ev.Type)) {
		return false
	}
	if f.Has("event") && !matchAction(f, ev.Action) {
		return false
	}
	if f.Has("image") && !matchImage(f, ev) {
		return false
	}
	for _, t := range []events.Type{
		events.ContainerEventType, events.NetworkEventType, events.VolumeEventType,
		events.PluginEventType, events.DaemonEventType, events.NodeEventType,
		events.ServiceEventType, events.SecretEventType, events.ConfigEventType,
	} {
		k := string(t)
		if f.Has(k) && (ev.Type != t || !(fuzzyMatch(f, k, ev.Actor.ID) || fuzzyMatch(f, k, ev.Actor.Attributes["name"]))) {
			return false
		}
	}
	return matchLabels(f, ev.Actor.Attributes)
}

// exactMatch is true when key is not filtered or v is one of its values.
func exactMatch(f types.Filters, key, v string) bool {
	if !f.Has(key) {
		return true
	}
	return f[key][v]
}

// fuzzyMatch is true when v equals a value of key or starts with it (short IDs).
func fuzzyMatch(f types.Filters, key, v string) bool {
	if v == "" {
		return false
	}
	for want, ok := range f[key] {
		if ok && strings.HasPrefix(v, want) {
			return true
		}
	}
	return false
}

// matchAction accepts "exec_create" for "exec_create: sh" as dockerd does.
func matchAction(f types.Filters, a events.Action) bool {
	s := string(a)
	if f["event"][s] {
		return true
	}
	if i := strings.Index(s, ":"); i > 0 {
		return f["event"][s[:i]]
	}
	return false
}

// matchImage compares the image filter with the actor ID and the image name
// (attribute "name" for image events, "image" for container ones), each also
// without its tag.
func matchImage(f types.Filters, ev types.EventMessage) bool {
	nameAttr := "image"
	if ev.Type == events.ImageEventType {
		nameAttr = "name"
	}
	name := ev.Actor.Attributes[nameAttr]
	for _, c := range []string{ev.Actor.ID, name, stripTag(ev.Actor.ID), stripTag(name)} {
		if c != "" && f["image"][c] {
			return true
		}
	}
	return false
}

func stripTag(s string) string {
	ref, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return s
	}
	if _, ok := ref.(reference.NamedTagged); ok {
		return reference.FamiliarName(ref)
	}
	return reference.FamiliarString(ref)
}

// matchLabels checks label=k and label=k=v against the attributes.
func matchLabels(f types.Filters, attrs map[string]string) bool {
	for want, ok := range f["label"] {
		if !ok {
			continue
		}
		k, v, hasV := strings.Cut(want, "=")
		got, present := attrs[k]
		if !present || (hasV && got != v) {
			return false
		}
	}
	return true
}

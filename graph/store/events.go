package store

import (
	"context"

	"github.com/moby/moby/api/types/events"
)

// EventLogger records image events for GET /events. The daemon implements
// it; the packages that change images (graph, graph/archive,
// graph/distribution) send through it.
type EventLogger interface {
	// LogImageEvent records action on the image (actorID: image ID or reference)
	// with attributes (at least "name").
	LogImageEvent(ctx context.Context, actorID string, action events.Action, attrs map[string]string)
}

// Event is one image event, sent once the store's lock is released (the
// event log may be slow or block on subscribers).
type Event struct {
	Actor  string
	Action events.Action
	Attrs  map[string]string
}

// NewEvent builds an event with dockerd's attributes: the image's labels
// plus "name".
func NewEvent(actor string, action events.Action, name string, labels map[string]string) Event {
	attrs := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		attrs[k] = v
	}
	attrs["name"] = name
	return Event{Actor: actor, Action: action, Attrs: attrs}
}

// Emit sends evs to log, if any.
func Emit(ctx context.Context, log EventLogger, evs ...Event) {
	if log == nil {
		return
	}
	for _, e := range evs {
		log.LogImageEvent(ctx, e.Actor, e.Action, e.Attrs)
	}
}

// Labels returns the config labels of rec (nil when unreadable).
func (s *Store) Labels(rec *ImageRecord) map[string]string {
	m, err := s.Meta(rec)
	if err != nil {
		return nil
	}
	return m.Config.Config.Labels
}

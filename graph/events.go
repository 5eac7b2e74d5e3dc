package graph

import (
	"context"

	"github.com/moby/moby/api/types/events"
)

// imageEvent is one event to send once the store's lock is released (the
// event log may be slow or block on subscribers).
type imageEvent struct {
	actor  string
	action events.Action
	attrs  map[string]string
}

// newImageEvent builds an event with dockerd's attributes: the image's
// labels plus "name".
func newImageEvent(actor string, action events.Action, name string, labels map[string]string) imageEvent {
	attrs := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		attrs[k] = v
	}
	attrs["name"] = name
	return imageEvent{actor: actor, action: action, attrs: attrs}
}

// emitEvents sends evs to the daemon's event log, if any.
func (s *Store) emitEvents(ctx context.Context, evs ...imageEvent) {
	if s.opts.Events == nil {
		return
	}
	for _, e := range evs {
		s.opts.Events.LogImageEvent(ctx, e.actor, e.action, e.attrs)
	}
}

// labelsOf returns the config labels of rec (nil when unreadable).
func (s *Store) labelsOf(rec *ImageRecord) map[string]string {
	m, err := s.st.Meta(rec)
	if err != nil {
		return nil
	}
	return m.Config.Config.Labels
}

package store

import (
	"context"

	"github.com/moby/moby/api/types/events"
	bolt "go.etcd.io/bbolt"
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

// Labels returns the config labels of rec (nil when unreadable), for its
// events. The image ID is the config's digest, so the labels of its stored
// summary are the config's whenever the summary was written from it
// (HasMeta): one read of meta.db rather than reading and parsing the
// manifest and the config, which with 50,000 images are outside the
// 4,096-entry metadata cache for most images a tag or an rmi names.
func (s *Store) Labels(rec *ImageRecord) map[string]string {
	var sm *Summary
	_ = s.db.View(func(btx *bolt.Tx) error {
		sm = storedSummary(btx.Bucket(bucketSummaries), rec.ID)
		return nil
	})
	return s.labelsOf(rec, sm)
}

// Labels is Store.Labels inside a change (its fn runs in the write
// transaction: no second transaction is opened beside it).
func (tx *Txn) Labels(rec *ImageRecord) map[string]string {
	return tx.s.labelsOf(rec, storedSummary(tx.v.tx.Bucket(bucketSummaries), rec.ID))
}

func (s *Store) labelsOf(rec *ImageRecord, sm *Summary) map[string]string {
	if sm != nil && sm.HasMeta && sm.ID == rec.ID {
		return sm.Labels
	}
	m, err := s.Meta(rec)
	if err != nil {
		return nil
	}
	return m.Config.Config.Labels
}

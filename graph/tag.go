package graph

import (
	"context"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/graph/store"
)

// TagImage answers POST /images/{name}/tag: repo[:tag] (tag defaults to
// latest) now names the image name, taken from any image it named before.
func (s *Store) TagImage(ctx context.Context, name, repo, tag string) error {
	ref, err := store.ParseNewTag(repo, tag)
	if err != nil {
		return err
	}
	rec, err := s.st.Lookup(name)
	if err != nil {
		return err
	}
	if err := s.tag(rec.ID, ref); err != nil {
		return err
	}
	store.Emit(ctx, s.opts.Events, store.NewEvent(rec.ID.String(), events.ActionTag, reference.FamiliarString(ref), s.st.Labels(rec)))
	return nil
}

// tag points ref at image id, in one change.
func (s *Store) tag(id digest.Digest, ref reference.Named) error {
	_, err := s.st.Update(false, func(tx *store.Txn) error {
		rec := tx.Image(id)
		if rec == nil {
			return store.NoSuchImage(id.String())
		}
		rec.LastTagTime = time.Now().UTC()
		return tx.PointRef(ref.String(), id)
	})
	return err
}

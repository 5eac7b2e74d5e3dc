package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/graph/store"
)

// TagImage answers POST /images/{name}/tag: repo[:tag] (tag defaults to
// latest) now names the image name, taken from any image it named before.
func (s *Store) TagImage(ctx context.Context, name, repo, tag string) error {
	ref, err := parseNewTag(repo, tag)
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

// parseNewTag validates repo and tag as dockerd does and returns the fully
// qualified name:tag.
func parseNewTag(repo, tag string) (reference.NamedTagged, error) {
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
	}
	if _, ok := named.(reference.Digested); ok {
		return nil, fmt.Errorf("refusing to create a tag with a digest reference%.0w", errdefs.ErrInvalidArgument)
	}
	if tag != "" {
		if _, ok := named.(reference.Tagged); ok {
			// repo already carries a tag: dockerd lets the tag parameter win.
			named = reference.TrimNamed(named)
		}
		t, err := reference.WithTag(named, tag)
		if err != nil {
			return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
		}
		named = t
	}
	// A repository named after the digest algorithm would make
	// "sha256:<hex>" ambiguous between a tag and an image ID.
	if reference.FamiliarName(named) == string(digest.Canonical) {
		return nil, fmt.Errorf("refusing to create an ambiguous tag using digest algorithm as name%.0w", errdefs.ErrInvalidArgument)
	}
	return reference.TagNameOnly(named).(reference.NamedTagged), nil
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

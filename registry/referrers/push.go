package referrers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry/transport"
)

// Referrers copied registry to registry (wharf copy --with-referrers): the
// listing is Of's (API or tag schema, and cosign's tags, with their
// bounds) for any number of subjects; the write is Push, which keeps the
// destination's listing true whether or not it has the API.

// maxConcurrentSubjects bounds the subjects asked about at once: each costs
// 4 requests (the API or the tag-schema index, and 3 cosign tags), so an
// index of 40 platforms asks 16 at a time rather than 160.
const maxConcurrentSubjects = 4

// OfSubjects lists what refers to each subject in the repository through
// the API (or the tag schema) and cosign's tags, not the attestations
// inside an index (a copy of the index carries them). A referrer found
// both ways is listed once per cosign tag and once without a tag, so that
// a copy writes both.
func (r Repo) OfSubjects(ctx context.Context, subjects []digest.Digest) ([]Referrer, error) {
	found := make([][]Referrer, len(subjects))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxConcurrentSubjects)
	for i, s := range subjects {
		g.Go(func() error {
			refs, err := r.Of(gctx, s, Options{})
			found[i] = refs
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Referrer
	for _, refs := range found {
		for _, ref := range refs {
			k := ref.Subject.String() + " " + ref.Descriptor.Digest.String() + " " + ref.Tag
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, ref)
		}
	}
	if len(out) > maxReferrers {
		return nil, transport.InvalidDocument(r.t.Host(), "more than %d referrers", maxReferrers)
	}
	return out, nil
}

// CheckSubject refuses a referrer whose manifest does not refer to the
// subject it was listed for: subject is the manifest's own (nil when it
// has none). A manifest's subject is what a registry indexes it under
// (its PUT answers OCI-Subject) and what Push adds it to the tag schema
// of, so copying a referrer of M that names V attaches it to V at the
// destination — an image the copy never touched. Listed through the API
// or the tag schema, a referrer must name the subject; under a cosign tag
// (ref.Tag, derived from the subject) it may name none, as cosign writes
// them, but not another. The source host served a listing its own
// manifest contradicts: ErrUpstream (502), naming it.
func CheckSubject(host string, ref Referrer, subject *ocispec.Descriptor) error {
	switch {
	case subject == nil && ref.Tag != "":
		return nil
	case subject == nil:
		return transport.InvalidDocument(host, "referrer %s listed for %s names no subject: not copied", ref.Descriptor.Digest, ref.Subject)
	case subject.Digest != ref.Subject:
		return transport.InvalidDocument(host, "referrer %s listed for %s refers to %s: not copied", ref.Descriptor.Digest, ref.Subject, subject.Digest)
	}
	return nil
}

// Indexing says how the destination came to list a referrer.
type Indexing int

const (
	// IndexedByRegistry: the registry answered the PUT with
	// OCI-Subject, so its referrers API lists it.
	IndexedByRegistry Indexing = iota
	// IndexedByTag: no OCI-Subject, so wharf added it to the
	// referrers tag schema's index <alg>-<hex> of its subject.
	IndexedByTag
	// NotIndexed: the manifest has no subject (a cosign tag), or
	// the tag-schema index already listed it.
	NotIndexed
)

// Push writes a referrer's manifest (its blobs must be there; desc is
// valid: the caller checked it) by
// digest, or under tag when given (a cosign tag), and makes the registry
// list it under its subject. The OCI-Subject header of the PUT says
// whether the registry did (distribution-spec 1.1, "Pushing Manifests
// with Subject"); without it, and when its referrers API does not list
// the referrer, the referrers tag schema is kept here: the
// subject's index is read (absent: a new one), the referrer's descriptor
// added with its artifactType and annotations, and the index put back
// under the tag. The read-modify-write races another writer of the same
// index as every client of the schema does; callers push the referrers of
// one subject one after another.
func (r Repo) Push(ctx context.Context, desc ocispec.Descriptor, content []byte, tag string) (Indexing, error) {
	if int64(len(content)) != desc.Size || desc.Digest.Algorithm().FromBytes(content) != desc.Digest {
		return 0, fmt.Errorf("manifest content does not match %s (%d bytes)%.0w", desc.Digest, desc.Size, errdefs.ErrInvalidArgument)
	}
	if len(content) > maxManifestSize {
		return 0, fmt.Errorf("manifest %s is larger than %d bytes%.0w", desc.Digest, maxManifestSize, errdefs.ErrInvalidArgument)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(content, &m); err != nil {
		return 0, fmt.Errorf("parse referrer %s: %v%.0w", desc.Digest, err, errdefs.ErrInvalidArgument)
	}
	ref := desc.Digest.String()
	if tag != "" {
		if !imagespec.ValidTag(tag) {
			return 0, fmt.Errorf("invalid tag %q%.0w", tag, errdefs.ErrInvalidArgument)
		}
		ref = tag
	}
	subjectHeader, err := r.t.PutManifest(ctx, desc, content, ref)
	if err != nil {
		return 0, err
	}
	if m.Subject == nil {
		return NotIndexed, nil
	}
	if subjectHeader != "" {
		return IndexedByRegistry, nil
	}
	// No OCI-Subject: a registry without the API, or one that serves it
	// but omits the header (go-containerregistry's, v0.22). The API then
	// decides, once per referrer; its 404 is remembered per host, as for
	// a listing, so a registry without it is asked once per daemon.
	host := r.t.Host()
	if !r.noAPI.has(host) {
		refs, err := r.referrersAPI(ctx, m.Subject.Digest, Options{})
		switch {
		case noReferrersAPI(err):
			r.noAPI.add(host)
		case err != nil:
			return 0, err
		case slices.ContainsFunc(refs, func(ref Referrer) bool { return ref.Descriptor.Digest == desc.Digest }):
			return IndexedByRegistry, nil
		}
	}
	entry := ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size, ArtifactType: artifactTypeOf(m), Annotations: m.Annotations}
	added, err := r.addToTagSchema(ctx, m.Subject.Digest, entry)
	if err != nil {
		return 0, err
	}
	if !added {
		return NotIndexed, nil
	}
	return IndexedByTag, nil
}

// addToTagSchema adds entry to subject's referrers tag-schema index;
// added is false when the index listed it already.
func (r Repo) addToTagSchema(ctx context.Context, subject digest.Digest, entry ocispec.Descriptor) (bool, error) {
	tag, ok := TagSchemaTag(subject)
	if !ok {
		return false, fmt.Errorf("subject %s cannot form a referrers tag%.0w", subject, errdefs.ErrInvalidArgument)
	}
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
	idx.SchemaVersion = 2
	desc, body, err := r.t.GetManifest(ctx, tag)
	switch {
	case err != nil:
		if !errdefs.IsNotFound(err) {
			return false, err
		}
	case desc.MediaType != ocispec.MediaTypeImageIndex || desc.Digest == subject:
		// The tag names something that is not a referrers index (or, as
		// some registries answer, the subject itself): overwriting it
		// could lose what someone put there.
		return false, fmt.Errorf("registry %s: tag %s is a %s, not a referrers index: not overwritten%.0w", r.t.Host(), tag, desc.MediaType, errdefs.ErrConflict)
	default:
		if err := json.Unmarshal(body, &idx); err != nil {
			return false, transport.InvalidDocument(r.t.Host(), "referrers index %s: %v", tag, err)
		}
		if idx.Manifests == nil {
			idx.Manifests = []ocispec.Descriptor{}
		}
	}
	if slices.ContainsFunc(idx.Manifests, func(d ocispec.Descriptor) bool { return d.Digest == entry.Digest }) {
		return false, nil
	}
	if len(idx.Manifests) >= maxReferrers {
		return false, transport.InvalidDocument(r.t.Host(), "referrers index %s: more than %d entries", tag, maxReferrers)
	}
	idx.Manifests = append(idx.Manifests, entry)
	b, err := json.Marshal(idx)
	if err != nil {
		return false, err
	}
	if err := r.t.PushManifest(ctx, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(b), Size: int64(len(b))}, b, tag); err != nil {
		return false, fmt.Errorf("referrers index %s: %w", tag, err)
	}
	return true, nil
}

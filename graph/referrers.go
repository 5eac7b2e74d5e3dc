package graph

import (
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/registry"
)

// remoteReferrers is the Referrers field of a remote inspect: never nil
// when asked for, so an image nothing refers to shows an empty list.
func remoteReferrers(in []registry.Referrer) *types.Referrers {
	out := make(types.Referrers, 0, len(in))
	for _, r := range in {
		d := r.Descriptor
		ref := types.Referrer{
			Subject:      r.Subject.String(),
			Digest:       d.Digest.String(),
			MediaType:    d.MediaType,
			ArtifactType: d.ArtifactType,
			Size:         d.Size,
			Annotations:  d.Annotations,
			Source:       r.Source,
		}
		if c := d.Annotations[ocispec.AnnotationCreated]; c != "" {
			// Only a time: the annotation is the registry's text.
			if t, err := time.Parse(time.RFC3339Nano, c); err == nil {
				ref.Created = t.UTC().Format(time.RFC3339Nano)
			}
		}
		out = append(out, ref)
	}
	return &out
}

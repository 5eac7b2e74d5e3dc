package distribution

import (
	"context"
	"errors"
	"time"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/registry"
)

// RemoteManifest answers inspect --raw: the top-level document exactly as
// the registry served it, with the registry's descriptor (its digest is what
// NAME@digest pins: not the hash of the bytes for signed schema1, sha512 for
// a sha512 reference). Nothing else is fetched — no platform is chosen, no
// config read — unless a platform is asked for: then the manifest chosen for
// it. Budget: cold ≤ 3 requests with a token, warm 1 (a HEAD).
func (s *Service) RemoteManifest(ctx context.Context, name string, opts types.RemoteInspectOptions) ([]byte, ocispec.Descriptor, error) {
	svc, err := s.registryService()
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	res, err := findByName(ctx, svc, name, credentials(opts.Auth, opts.Registries, opts.MetaHeaders))
	if err != nil {
		return nil, ocispec.Descriptor{}, noSuchImage(name, err)
	}
	if opts.Platform != nil {
		desc, b, err := res.PlatformManifest(ctx, s.platformOr(opts.Platform))
		return b, desc, err
	}
	return res.Raw, res.Descriptor, nil
}

// noSuchImage words a missing repository or tag as a local inspect does;
// a platform an index lacks is reported as is (it names the platforms
// there are).
func noSuchImage(name string, err error) error {
	if errdefs.IsNotFound(err) && !errors.Is(err, registry.ErrNoMatchingPlatform) {
		return store.NoSuchImage(name)
	}
	return err
}

// RemoteInspect is a remote inspect's answer, in one trip: what the
// registry said of the image and, read through the same repository with the
// credentials its search bound, the verdict on it. graph builds the API's
// shape from it.
type RemoteInspect struct {
	Image *registry.RemoteImage
	// Trust is the verdict on the digest the name resolves to now, under a
	// policy or with verify=1; nil otherwise. A rejected image still
	// inspects: Trust says why.
	Trust *types.Trust
	// Referrers is the Referrers field, set when they were asked for.
	Referrers *types.Referrers
	// RateLimit is what the registry that answered last said of its rate
	// limit; nil when it sent none.
	RateLimit *types.RateLimit
}

// InspectRemote asks the registry, then judges the answer; a missing
// repository or tag becomes the same "No such image" a local inspect
// answers.
func (s *Service) InspectRemote(ctx context.Context, name string, opts types.RemoteInspectOptions) (*RemoteInspect, error) {
	svc, err := s.registryService()
	if err != nil {
		return nil, err
	}
	req := registry.InspectRequest{
		Name:        name,
		Platform:    s.platformOr(opts.Platform),
		Credentials: credentials(opts.Auth, opts.Registries, opts.MetaHeaders),
	}
	if opts.Referrers != nil {
		req.Referrers = &registry.ReferrersOptions{ArtifactType: opts.Referrers.ArtifactType}
	}
	ri, err := svc.Inspect(ctx, req)
	if err != nil {
		return nil, noSuchImage(name, err)
	}
	if ri == nil {
		return nil, store.NoSuchImage(name)
	}
	out := &RemoteInspect{Image: ri}
	if opts.Referrers != nil {
		out.Referrers = remoteReferrers(ri.Referrers)
	}
	if rl := ri.RateLimit; rl != nil {
		out.RateLimit = &types.RateLimit{Limit: rl.Limit, Remaining: rl.Remaining, Window: int64(rl.Window / time.Second), Host: rl.Host, Seen: rl.Seen}
	}
	if out.Trust, err = s.judgeRemoteImage(ctx, ri, opts.Verify); err != nil {
		return nil, err
	}
	return out, nil
}

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

package distribution

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry"
)

// maxConcurrentCopies bounds the blobs one copy moves at a time. Each is a
// GET streamed into a PATCH holding only net/http's buffers, so memory does
// not grow with it; 4 (go-containerregistry's default) keeps both
// registries busy without opening more connections per side than crane.
const maxConcurrentCopies = 4

// Bounds of the platform manifests a whole-index copy holds, every one
// read and parsed before the first blob moves (the blobs go first, the
// manifests after them, so that DST never names a blob it lacks). Only
// the index's 4 MiB cap alone leaves room for ~27,000 children, and 32
// distinct manifests of 4 MiB take a process from 16 MB to 457 MB. A real
// multi-platform index lists tens of
// manifests of a few KiB (an image of 8 platforms with their buildx
// attestations: 16, ~30 KiB in all), so 16 MiB — 4 manifests at the
// 4 MiB cap, as the referrers path allows 16 in its 64 MiB — and 1,000
// manifests (1,000 GETs) leave orders of magnitude to spare. The index's
// declared sizes are checked before any is fetched; FetchManifest
// verifies each one against its size.
const (
	maxPlatformManifests     = 1000
	maxPlatformManifestBytes = 16 << 20
)

// CopyImage copies an image from one registry to another without the local
// store (POST /wharf/images/copy): SRC is resolved on the one resolution
// path (registry.Service.FindImage); blobs go registry to registry through
// Repository.TransferBlob, the path push takes (HEAD, mount, or a GET
// streamed into a PUT, verified while it streams); the platform manifests
// follow their blobs and the top level comes last, so DST never names a
// blob it lacks. The manifest bytes are copied exactly: DST's digest is
// SRC's, or the platform manifest's with a platform.
func (s *Service) CopyImage(ctx context.Context, opts types.CopyOptions, out types.ProgressWriter) error {
	svc, err := s.registryService()
	if err != nil {
		return err
	}
	if opts.Platform != nil && opts.AllPlatforms {
		return fmt.Errorf("--platform and --all-platforms exclude each other%.0w", errdefs.ErrInvalidArgument)
	}
	dstNamed, err := reference.ParseNormalizedNamed(opts.Destination)
	if err != nil {
		return fmt.Errorf("destination: %v%.0w", err, errdefs.ErrInvalidArgument)
	}
	// Each registry gets the set keyed by it (registry/credentials.go).
	srcCreds := registry.Credentials{Registries: opts.Auth, MetaHeaders: opts.MetaHeaders}
	dstCreds := srcCreds

	res, err := findByName(ctx, svc, opts.Source, srcCreds)
	if err != nil {
		return err
	}
	plan, err := s.copyPlan(ctx, res, opts)
	if err != nil {
		return err
	}
	// The policy judges SRC, under SRC's scope, before a blob moves: the
	// top level, and the platform manifest when one was chosen.
	var srcPlatform digest.Digest
	if plan.top.desc.Digest != res.Descriptor.Digest {
		srcPlatform = plan.top.desc.Digest
	}
	srcTrust, err := s.admit(ctx, "copy", res, srcPlatform)
	if err != nil {
		return err
	}

	// DST: its tag, else SRC's tag; a digest in DST must be what results.
	tag := res.Tag
	if t, ok := dstNamed.(reference.Tagged); ok {
		tag = t.Tag()
	}
	top := plan.top
	if c, ok := dstNamed.(reference.Canonical); ok {
		if c.Digest() != top.desc.Digest {
			return fmt.Errorf("destination digest %s is not what the copy writes (%s)%.0w", c.Digest(), top.desc.Digest, errdefs.ErrInvalidArgument)
		}
		if _, tagged := dstNamed.(reference.Tagged); !tagged {
			tag = "" // NAME@DIGEST: push by digest only
		}
	}
	dstRepo, err := svc.Repository(ctx, reference.TrimNamed(dstNamed), dstCreds)
	if err != nil {
		return err
	}

	po := newProgressOutput(out)
	if err := po.status("", fmt.Sprintf("Copying %s to %s", reference.FamiliarString(res.Ref()), reference.FamiliarString(dstNamed))); err != nil {
		return err
	}
	var mountFrom []string
	if dstRepo.Info().Index.Name == res.Registry {
		mountFrom = []string{reference.Path(res.Name)}
	}
	result := types.CopyResult{Source: imagespec.FormatReference(res.Name.String(), "", res.Descriptor.Digest.String()), SourceTrust: srcTrust}
	result.Blobs, result.Skipped = len(plan.layers)+len(plan.configs), plan.skipped
	if err := plan.run(ctx, copyTransfer(res.Repository().OpenBlobAt, dstRepo, mountFrom, po, &result), tag); err != nil {
		return err
	}

	written := imagespec.FormatReference(reference.TrimNamed(dstNamed).String(), tag, top.desc.Digest.String())
	result.Destination, result.Digest, result.MediaType, result.Size = written, top.desc.Digest.String(), top.desc.MediaType, len(top.bytes)
	if err := po.status("", fmt.Sprintf("%s: digest: %s size: %d", tagOrDigest(tag, top.desc.Digest), top.desc.Digest, len(top.bytes))); err != nil {
		return err
	}
	if opts.WithReferrers {
		// After the image: a referrer that fails leaves the image copied,
		// and the error says so.
		subjects := referrerSubjects(top, plan.manifests, res.Index)
		if err := s.copyReferrers(ctx, res, dstRepo, mountFrom, subjects, opts.IncludeForeign, po, &result); err != nil {
			return fmt.Errorf("the image was copied to %s, but not its referrers: %w", written, err)
		}
		// The signatures travelled: DST's scope judges them there (a
		// bundle by its digest; a legacy signature only where its
		// signedIdentity accepts the new name). Reported, not enforced:
		// the copy is done.
		if err := s.judgeDestination(ctx, dstRepo, dstNamed, tag, top.desc.Digest, po, &result); err != nil {
			return err
		}
	}
	aux, err := json.Marshal(result)
	if err != nil {
		return err
	}
	raw := json.RawMessage(aux)
	return po.write(jsonstream.Message{Progress: &jsonstream.Progress{}, Aux: &raw})
}

func tagOrDigest(tag string, d digest.Digest) string {
	if tag != "" {
		return tag
	}
	return d.String()
}

// copyPlan is what to write at DST: the top level and every manifest (the
// top level among them when it is a manifest) with their blobs. An index is
// copied whole unless a platform is asked for; then that platform's
// manifest alone is the top level.
func (s *Service) copyPlan(ctx context.Context, res *registry.Resolved, opts types.CopyOptions) (*transferPlan, error) {
	if res.Index == nil || opts.Platform != nil {
		var p ocispec.Platform
		if opts.Platform != nil {
			p = *opts.Platform
		}
		desc, b, err := res.PlatformManifest(ctx, p)
		if err != nil {
			return nil, err
		}
		m, err := parseRemoteManifest(desc, b)
		if err != nil {
			return nil, err
		}
		return newTransferPlan(m, []planManifest{m}, opts.IncludeForeign), nil
	}
	if err := checkIndexBudget(res); err != nil {
		return nil, err
	}
	top := planManifest{desc: res.Descriptor, bytes: res.Raw}
	out := []planManifest{top}
	for _, d := range res.Index.Manifests {
		if imagespec.IsIndex(d.MediaType) {
			return nil, fmt.Errorf("index %s names another index (%s): nested indexes are not copied%.0w", res.Descriptor.Digest, d.Digest, errdefs.ErrNotImplemented)
		}
		b, err := res.Repository().FetchManifest(ctx, d)
		if err != nil {
			return nil, err
		}
		m, err := parseRemoteManifest(d, b)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return newTransferPlan(top, out, opts.IncludeForeign), nil
}

// checkIndexBudget refuses an index whose platform manifests a copy could
// not hold within maxPlatformManifests and maxPlatformManifestBytes. The
// class is ErrUpstream (502, naming the registry), as for every bound on
// what a registry serves (tag lists, referrers): the source served it and
// the user's arguments are not at fault, though --platform, which fetches
// one manifest, copies what is wanted of such an index.
func checkIndexBudget(res *registry.Resolved) error {
	var total int64
	for _, d := range res.Index.Manifests {
		total += d.Size
	}
	if n := len(res.Index.Manifests); n > maxPlatformManifests || total > maxPlatformManifestBytes {
		return fmt.Errorf("registry %s: index %s lists %d manifests of %d bytes in all: a copy holds at most %d manifests and %d bytes of them (copy one platform with --platform)%.0w",
			res.Registry, res.Descriptor.Digest, n, total, maxPlatformManifests, maxPlatformManifestBytes, registry.ErrUpstream)
	}
	return nil
}

// parseRemoteManifest parses a manifest read at SRC: schema1 is refused
// (501), and a manifest that does not parse is a 400.
func parseRemoteManifest(desc ocispec.Descriptor, b []byte) (planManifest, error) {
	if imagespec.IsSchema1(manifestMediaType(desc, b)) {
		return planManifest{}, fmt.Errorf("manifest %s is schema1, which wharf does not copy%.0w", desc.Digest, errdefs.ErrNotImplemented)
	}
	m, err := parseManifest(desc, b)
	if err != nil {
		return planManifest{}, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	return m, nil
}

// copyTransfer is how a copy runs a plan: blobs read from open (SRC's
// verifying reader, or a layout's files), maxConcurrentCopies at a time,
// each counted in result.
func copyTransfer(open BlobOpener, dst *registry.Repository, mountFrom []string, po *progressOutput, result *types.CopyResult) transfer {
	return transfer{
		open:      open,
		dst:       dst,
		mountFrom: mountFrom,
		limit:     maxConcurrentCopies,
		po:        po,
		words:     copyWords,
		moved: func(how registry.BlobTransfer, size int64) {
			switch how {
			case registry.BlobExisted:
				result.Existed++
			case registry.BlobMounted:
				result.Mounted++
			default:
				result.Uploaded++
				result.BytesUploaded += size
			}
		},
	}
}

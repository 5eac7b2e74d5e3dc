package distribution

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

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

// copyManifest is one manifest to write at the destination.
type copyManifest struct {
	desc  ocispec.Descriptor
	bytes []byte
	man   ocispec.Manifest
}

// CopyImage copies an image from one registry to another without the local
// store (POST /wharf/images/copy): SRC is resolved on the one resolution
// path (registry.Service.Resolve); blobs go registry to registry through
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
	cands, err := svc.Candidates(opts.Source)
	if err != nil {
		return err
	}
	srcCreds := credentialsFor(opts.Auth, reference.Domain(cands[0]), opts.MetaHeaders)
	dstCreds := credentialsFor(opts.Auth, reference.Domain(dstNamed), opts.MetaHeaders)

	res, err := svc.Resolve(ctx, opts.Source, srcCreds)
	if err != nil {
		return err
	}
	top, manifests, err := s.copyPlan(ctx, res, opts)
	if err != nil {
		return err
	}

	// DST: its tag, else SRC's tag; a digest in DST must be what results.
	tag := res.Tag
	if t, ok := dstNamed.(reference.Tagged); ok {
		tag = t.Tag()
	}
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
	result := types.CopyResult{Source: res.Name.String() + "@" + res.Descriptor.Digest.String()}
	layers, configs, skipped := copyBlobs(manifests, opts.IncludeForeign)
	result.Blobs, result.Skipped = len(layers)+len(configs), skipped
	if err := s.copyBlobList(ctx, res.Repository(), dstRepo, mountFrom, layers, configs, po, &result); err != nil {
		return err
	}
	for _, m := range manifests {
		if m.desc.Digest == top.desc.Digest {
			continue
		}
		if err := dstRepo.PushManifest(ctx, m.desc, m.bytes, ""); err != nil {
			return fmt.Errorf("copy manifest %s: %w", m.desc.Digest, err)
		}
	}
	if err := dstRepo.PushManifest(ctx, top.desc, top.bytes, tag); err != nil {
		return fmt.Errorf("copy manifest %s: %w", top.desc.Digest, err)
	}

	written := reference.TrimNamed(dstNamed).String()
	if tag != "" {
		written += ":" + tag
	}
	written += "@" + top.desc.Digest.String()
	result.Destination, result.Digest, result.MediaType, result.Size = written, top.desc.Digest.String(), top.desc.MediaType, len(top.bytes)
	if err := po.status("", fmt.Sprintf("%s: digest: %s size: %d", tagOrDigest(tag, top.desc.Digest), top.desc.Digest, len(top.bytes))); err != nil {
		return err
	}
	if opts.WithReferrers {
		// After the image: a referrer that fails leaves the image copied,
		// and the error says so.
		subjects := referrerSubjects(top, manifests, res.Index)
		if err := s.copyReferrers(ctx, res, dstRepo, mountFrom, subjects, opts.IncludeForeign, po, &result); err != nil {
			return fmt.Errorf("the image was copied to %s, but not its referrers: %w", written, err)
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
// top level among them when it is a manifest). An index is copied whole
// unless a platform is asked for; then that platform's manifest alone is
// the top level.
func (s *Service) copyPlan(ctx context.Context, res *registry.Resolved, opts types.CopyOptions) (copyManifest, []copyManifest, error) {
	if res.Index == nil || opts.Platform != nil {
		var p ocispec.Platform
		if opts.Platform != nil {
			p = *opts.Platform
		}
		desc, b, err := res.PlatformManifest(ctx, p)
		if err != nil {
			return copyManifest{}, nil, err
		}
		m, err := parseCopyManifest(desc, b)
		if err != nil {
			return copyManifest{}, nil, err
		}
		return m, []copyManifest{m}, nil
	}
	top := copyManifest{desc: res.Descriptor, bytes: res.Raw}
	out := []copyManifest{top}
	for _, d := range res.Index.Manifests {
		if imagespec.IsIndex(d.MediaType) {
			return copyManifest{}, nil, fmt.Errorf("index %s names another index (%s): nested indexes are not copied%.0w", res.Descriptor.Digest, d.Digest, errdefs.ErrNotImplemented)
		}
		b, err := res.Repository().FetchManifest(ctx, d)
		if err != nil {
			return copyManifest{}, nil, err
		}
		m, err := parseCopyManifest(d, b)
		if err != nil {
			return copyManifest{}, nil, err
		}
		out = append(out, m)
	}
	return top, out, nil
}

func parseCopyManifest(desc ocispec.Descriptor, b []byte) (copyManifest, error) {
	mt := desc.MediaType
	if mt == "" {
		mt = imagespec.Sniff(b)
	}
	if imagespec.IsSchema1(mt) {
		return copyManifest{}, fmt.Errorf("manifest %s is schema1, which wharf does not copy%.0w", desc.Digest, errdefs.ErrNotImplemented)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(b, &man); err != nil {
		return copyManifest{}, fmt.Errorf("parse manifest %s: %v%.0w", desc.Digest, err, errdefs.ErrInvalidArgument)
	}
	return copyManifest{desc: ocispec.Descriptor{MediaType: mt, Digest: desc.Digest, Size: int64(len(b))}, bytes: b, man: man}, nil
}

// copyBlobs lists the distinct layers and configs of manifests; foreign
// layers (with urls) are left out unless includeForeign.
func copyBlobs(manifests []copyManifest, includeForeign bool) (layers, configs []ocispec.Descriptor, skipped int) {
	seen := map[digest.Digest]bool{}
	for _, m := range manifests {
		for _, l := range m.man.Layers {
			if seen[l.Digest] {
				continue
			}
			seen[l.Digest] = true
			if len(l.URLs) > 0 && !includeForeign {
				skipped++
				continue
			}
			layers = append(layers, l)
		}
		if c := m.man.Config; c.Digest != "" && !seen[c.Digest] {
			seen[c.Digest] = true
			configs = append(configs, c)
		}
	}
	return layers, configs, skipped
}

// copyBlobList moves layers, at most maxConcurrentCopies at a time, and
// beside them the configs, as many at a time: a config queued behind the
// layers added its own 5 round trips (HEAD, POST, GET, PATCH, PUT) after
// the last layer, ~190 ms at 25 ms RTT in case 7 of the bench. The first
// failure starts no more but lets the transfers under way finish
// (eachBounded, as for push).
func (s *Service) copyBlobList(ctx context.Context, src, dst *registry.Repository, mountFrom []string, layers, configs []ocispec.Descriptor, po *progressOutput, result *types.CopyResult) error {
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, b := range append(append([]ocispec.Descriptor(nil), layers...), configs...) {
		if err := po.layer(shortID(b.Digest), "Waiting"); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	move := func(b ocispec.Descriptor) error {
		how, n, err := copyBlob(ctx, src, dst, mountFrom, b, po)
		if err != nil {
			return fmt.Errorf("copy blob %s: %w", b.Digest, err)
		}
		mu.Lock()
		defer mu.Unlock()
		switch how {
		case registry.BlobExisted:
			result.Existed++
		case registry.BlobMounted:
			result.Mounted++
		default:
			result.Uploaded++
			result.BytesUploaded += n
		}
		return nil
	}
	// Two pools under one stop: the layers, and the configs beside them.
	return eachBounded(stop, cancel, maxConcurrentCopies, nil, move, layers, configs)
}

// copyBlob moves one blob and reports it: "Already exists", "Mounted from
// REPO", or "Copying" progress then "Copied".
func copyBlob(ctx context.Context, src, dst *registry.Repository, mountFrom []string, desc ocispec.Descriptor, po *progressOutput) (registry.BlobTransfer, int64, error) {
	id := shortID(desc.Digest)
	open := func(ctx context.Context) (io.ReadCloser, error) {
		rc, err := src.FetchBlob(ctx, desc)
		if err != nil {
			return nil, err
		}
		return struct {
			io.Reader
			io.Closer
		}{newProgressReader(rc, po, id, "Copying", desc.Size), rc}, nil
	}
	how, from, err := dst.TransferBlob(ctx, desc, mountFrom, open)
	if err != nil {
		return 0, 0, err
	}
	switch how {
	case registry.BlobExisted:
		return how, 0, po.layer(id, "Already exists")
	case registry.BlobMounted:
		return how, 0, po.layer(id, "Mounted from "+from)
	default:
		return how, desc.Size, po.layer(id, "Copied")
	}
}

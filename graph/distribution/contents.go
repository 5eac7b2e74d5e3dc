package distribution

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/registry"
)

// LayerIndexer is told of each layer a pull downloads from its first byte
// (graph/contents implements it): the pull copies the compressed bytes into
// w as it writes them, then calls commit once the blob's digest is verified
// and stored, or abort when the download fails. A nil w: not wanted.
type LayerIndexer interface {
	IndexLayer(ctx context.Context, desc ocispec.Descriptor) (w io.Writer, commit func() error, abort func())
}

// RemoteLayers is one platform image of a registry, as the contents room
// reads it: resolved with the caller's credentials, which opened the
// repository its blobs are read from.
type RemoteLayers struct {
	Manifest ocispec.Descriptor
	Layers   []ocispec.Descriptor
	DiffIDs  []digest.Digest
	Blobs    *RemoteBlobs
	// Config is the image's config, parsed, and ConfigDescriptor the
	// manifest's descriptor of it (a diff compares them and counts a
	// pull's bytes with them).
	Config           *store.ImageConfig
	ConfigDescriptor ocispec.Descriptor
	// Trust is the verdict on the platform manifest when RemoteOptions.Judge
	// asked for it under a policy; nil otherwise.
	Trust *types.Trust
}

// RemoteLayers resolves name on its registry as a remote inspect does (the
// same credentials bound to the same registry, the same platform choice,
// the same "No such image") and returns the chosen manifest's layers,
// their annotations kept, and the config's diff IDs. A schema1 or v1 image
// has no layer digests a contents read could use: ErrNotImplemented.
func (s *Service) RemoteLayers(ctx context.Context, name string, opts types.FilesOptions) (*RemoteLayers, error) {
	return s.RemoteLayersWith(ctx, name, opts, RemoteOptions{})
}

// RemoteOptions are what RemoteLayersWith does beside the resolution.
type RemoteOptions struct {
	// Judge asks for the signature policy's verdict on the image, as a
	// remote inspect gives it (nil without a policy), from the same
	// resolution: a diff's signer section costs no second look-up.
	Judge bool
	// Early, when set, is handed the image's layers as soon as its
	// platform manifest is read, a round trip before the config: Manifest,
	// Layers and Blobs only. It must not block, and may not be called (a
	// look-up that joined an identical one in flight).
	Early func(*RemoteLayers)
}

// RemoteLayersWith is RemoteLayers with ro.
func (s *Service) RemoteLayersWith(ctx context.Context, name string, opts types.FilesOptions, ro RemoteOptions) (*RemoteLayers, error) {
	svc, err := s.registryService()
	if err != nil {
		return nil, err
	}
	req := registry.InspectRequest{
		Name:        name,
		Platform:    s.platformOr(opts.Platform),
		Credentials: credentials(opts.Auth, opts.Registries, opts.MetaHeaders),
	}
	if ro.Early != nil {
		req.OnManifest = func(repo *registry.Repository, desc ocispec.Descriptor, m *ocispec.Manifest) {
			ro.Early(&RemoteLayers{Manifest: desc, Layers: append([]ocispec.Descriptor(nil), m.Layers...), Blobs: &RemoteBlobs{repo: repo, st: s.st}})
		}
	}
	ri, err := svc.Inspect(ctx, req)
	if err != nil {
		return nil, noSuchImage(name, err)
	}
	if ri == nil {
		return nil, store.NoSuchImage(name)
	}
	if ri.V1 || ri.Parsed == nil {
		return nil, fmt.Errorf("%s: reading the files of a schema1 or v1 image is not supported%.0w", name, errdefs.ErrNotImplemented)
	}
	repo := ri.Repository()
	if repo == nil {
		return nil, fmt.Errorf("%s: no repository to read the layers from%.0w", name, errdefs.ErrInternal)
	}
	// The config was read within the registry's document cap; a config
	// that contradicts its manifest is the registry's fault, as on a pull.
	if err := checkDiffIDs(ri.Registry, *ri.Parsed, ri.ConfigBytes); err != nil {
		return nil, err
	}
	cfg, err := store.ParseImageConfig(ri.ConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("registry %s: config %s: %w%.0w", ri.Registry, ri.Config.Digest, err, registry.ErrUpstream)
	}
	out := &RemoteLayers{
		Manifest:         ri.Manifest,
		Layers:           append([]ocispec.Descriptor(nil), ri.Parsed.Layers...),
		DiffIDs:          append([]digest.Digest(nil), cfg.RootFS.DiffIDs...),
		Blobs:            &RemoteBlobs{repo: repo, st: s.st},
		Config:           cfg,
		ConfigDescriptor: ri.Config,
	}
	if ro.Judge {
		if out.Trust, err = s.judgeRemoteImage(ctx, ri, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RemoteBlobs reads the layers of one repository (graph/contents' Blobs),
// with the credentials the name's resolution bound to it. A layer the local
// store holds is read from its file: a remote image whose layers are
// pulled costs no blob request.
type RemoteBlobs struct {
	repo *registry.Repository
	st   *store.Store // nil: never local
}

// Open reads the blob whole, verified against desc at EOF: the registry
// client's verifying reader, or the stored file hashed as it is read
// (store.OpenBlobVerified: the Blobs contract holds for both, whatever
// happened to the file since it was written).
func (b *RemoteBlobs) Open(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if !desc.Digest.Algorithm().Available() {
		return nil, fmt.Errorf("unsupported digest algorithm in %q%.0w", desc.Digest, errdefs.ErrInvalidArgument)
	}
	if b.Local(desc) {
		if rc, err := b.st.OpenBlobVerified(desc); !b.gone(desc, err) {
			return rc, err
		}
	}
	return b.repo.FetchBlob(ctx, desc)
}

// ReadRange reads bytes [off, off+n) of the blob in one single-range
// request (registry.Repository.ReadBlobRange), or a section of the stored
// file.
func (b *RemoteBlobs) ReadRange(ctx context.Context, desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off > desc.Size || n > desc.Size-off {
		return nil, fmt.Errorf("blob %s: range [%d, +%d) outside its %d bytes%.0w", desc.Digest, off, n, desc.Size, errdefs.ErrInvalidArgument)
	}
	if b.Local(desc) {
		if rc, err := b.st.OpenBlobSection(desc, off, n); !b.gone(desc, err) {
			return rc, err
		}
	}
	return b.repo.ReadBlobRange(ctx, desc, off, n)
}

// Local reports whether the blob is read from the local store.
func (b *RemoteBlobs) Local(desc ocispec.Descriptor) bool {
	return b.st != nil && b.st.HasBlob(desc.Digest)
}

// gone reports whether a stored blob failed to open because it was
// removed since Local said so: it is then read from the registry.
func (b *RemoteBlobs) gone(desc ocispec.Descriptor, err error) bool {
	return errors.Is(err, errdefs.ErrNotFound) || (err != nil && !b.Local(desc))
}

package archive

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/decompress"
)

// loadDocker records the images of a docker-save manifest.json, building a
// Docker schema2 manifest for each.
func (s *Archiver) loadDocker(ctx context.Context, arc *loadArchive, dm []dockerManifestEntry) ([]*loadedImage, error) {
	var out []*loadedImage
	for _, e := range dm {
		cb, err := s.archiveContent(arc, e.Config, store.MaxConfigSize)
		if err != nil {
			return nil, err
		}
		cfg, err := store.ParseImageConfig(cb)
		if err != nil {
			return nil, fmt.Errorf("invalid archive: %s: %w", e.Config, err)
		}
		if len(cfg.RootFS.DiffIDs) != len(e.Layers) {
			return nil, fmt.Errorf("invalid archive: %s has %d layers but %d diff IDs%.0w", e.Config, len(e.Layers), len(cfg.RootFS.DiffIDs), errdefs.ErrInvalidArgument)
		}
		var layers []ocispec.Descriptor
		for i, p := range e.Layers {
			d, err := s.archiveBlob(ctx, arc, p)
			if err != nil {
				return nil, err
			}
			mt, diffID, err := s.layerDiffID(ctx, arc, d.Digest)
			if err != nil {
				return nil, fmt.Errorf("invalid archive: layer %s: %w", p, err)
			}
			if diffID != cfg.RootFS.DiffIDs[i] {
				return nil, fmt.Errorf("invalid archive: layer %s has diff ID %s, config says %s%.0w", p, diffID, cfg.RootFS.DiffIDs[i], errdefs.ErrInvalidArgument)
			}
			layers = append(layers, ocispec.Descriptor{MediaType: mt, Digest: d.Digest, Size: d.Size})
		}
		if err := checkPlatform(arc, cb, e.Config); err != nil {
			return nil, err
		}
		rec, err := s.storeManifest(ctx, arc.lease, cb, layers, true)
		if err != nil {
			return nil, err
		}
		im := &loadedImage{rec: rec}
		for _, t := range e.RepoTags {
			n, err := store.NormaliseRefs([]string{t}, false)
			if err != nil {
				return nil, fmt.Errorf("invalid archive: %w", err)
			}
			im.tags = appendUnique(im.tags, n[0])
		}
		out = append(out, im)
	}
	return out, nil
}

// layerDiffID returns the media type of stored layer d (gzip or plain tar,
// by magic number) and the digest of its uncompressed content. Each digest
// is decompressed once per load (the archive may name it many times), the
// decompression draws on the load's budget, and it stops when ctx ends.
func (s *Archiver) layerDiffID(ctx context.Context, arc *loadArchive, d digest.Digest) (string, digest.Digest, error) {
	if r, ok := arc.diffIDs[d]; ok {
		return r.mediaType, r.diffID, r.err
	}
	mt, diffID, err := s.computeDiffID(ctx, arc.budget, d)
	if arc.diffIDs == nil {
		arc.diffIDs = map[digest.Digest]diffIDResult{}
	}
	arc.diffIDs[d] = diffIDResult{mt, diffID, err}
	return mt, diffID, err
}

type diffIDResult struct {
	mediaType string
	diffID    digest.Digest
	err       error
}

func (s *Archiver) computeDiffID(ctx context.Context, budget *decompress.Budget, d digest.Digest) (string, digest.Digest, error) {
	f, _, err := s.st.OpenBlob(d)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	var magic [2]byte
	n, _ := io.ReadFull(f, magic[:])
	if n == 2 && bytes.Equal(magic[:], []byte{0x1f, 0x8b}) {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", "", err
		}
		src, err := decompress.Gzip(f, s.bombLimit)
		if err != nil {
			return "", "", err
		}
		if budget != nil {
			src = budget.Guard(src)
		}
		dg := digest.SHA256.Digester()
		if _, err := store.CopyCtx(ctx, dg.Hash(), src); err != nil {
			return "", "", err
		}
		return imagespec.MediaTypeDockerLayerGzip, dg.Digest(), nil
	}
	return imagespec.MediaTypeDockerLayer, d, nil
}

package mirror

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/ocilayout"
)

// layoutArchive is an OCI layout extracted under dir: its index and the
// blobs' files, each verified against its name as it was written.
type layoutArchive struct {
	dir   string
	index ocispec.Index
	blobs map[digest.Digest]int64 // size of each blob extracted
}

// readLayoutArchive extracts an OCI layout tar: oci-layout, index.json
// (at most maxArchiveIndex) and blobs/<alg>/<hex>, each hashed while
// written and refused when it does not match its name. Any other entry,
// a link, or a path that leaves the layout is refused: nothing is written
// outside dir. Sparse entries are refused and no more is written than the
// archive bytes read (safetar), so a small archive cannot fill the disk
// before a blob's hash is checked.
func readLayoutArchive(body io.Reader, dir string) (*layoutArchive, error) {
	la := &layoutArchive{dir: dir, blobs: map[digest.Digest]int64{}}
	tr := ocilayout.NewReader(body)
	var haveIndex, haveLayout bool
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("archive: %w%.0w", err, errdefs.ErrInvalidArgument)
		}
		name := strings.TrimPrefix(filepath.ToSlash(filepath.Clean(h.Name)), "./")
		if h.Typeflag == tar.TypeDir {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("archive: %q is not a regular file%.0w", h.Name, errdefs.ErrInvalidArgument)
		}
		switch {
		case name == ocilayout.LayoutFile:
			if err := ocilayout.ReadLayoutFile(tr); err != nil {
				return nil, fmt.Errorf("archive: %w", err)
			}
			haveLayout = true
		case name == ocilayout.IndexFile:
			idx, err := ocilayout.ReadIndex(tr, h.Size, maxArchiveIndex)
			if err != nil {
				return nil, fmt.Errorf("archive: %w", err)
			}
			la.index = idx
			haveIndex = true
		case strings.HasPrefix(name, ocilayout.BlobsDir+"/"):
			d, ok := ocilayout.ParseBlobPath(name)
			if !ok {
				return nil, fmt.Errorf("archive: %q is not blobs/<algorithm>/<hex>%.0w", h.Name, errdefs.ErrInvalidArgument)
			}
			if err := la.extract(tr, d, h.Size); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("archive: %q is not part of an OCI image layout%.0w", h.Name, errdefs.ErrInvalidArgument)
		}
	}
	if !haveLayout || !haveIndex {
		return nil, fmt.Errorf("archive: no oci-layout or index.json: not an OCI image layout (or a broken one)%.0w", errdefs.ErrInvalidArgument)
	}
	if len(la.index.Manifests) > maxSyncImages {
		return nil, fmt.Errorf("archive: index.json lists more than %d manifests%.0w", maxSyncImages, errdefs.ErrInvalidArgument)
	}
	return la, nil
}

func (la *layoutArchive) file(d digest.Digest) string {
	return filepath.Join(la.dir, string(d.Algorithm())+"-"+d.Encoded())
}

// extract writes n bytes of r as blob d, verified.
func (la *layoutArchive) extract(r io.Reader, d digest.Digest, n int64) error {
	f, err := os.OpenFile(la.file(d), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	v := d.Verifier()
	_, err = io.Copy(io.MultiWriter(f, v), r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if !v.Verified() {
		return fmt.Errorf("archive: blob %s does not hash to its name%.0w", d, errdefs.ErrInvalidArgument)
	}
	la.blobs[d] = n
	return nil
}

// open reads a blob of the archive from offset (TransferBlob resumes).
func (la *layoutArchive) open(_ context.Context, desc ocispec.Descriptor, offset int64) (io.ReadCloser, error) {
	size, ok := la.blobs[desc.Digest]
	if !ok {
		return nil, fmt.Errorf("archive: blob %s is not in it%.0w", desc.Digest, errdefs.ErrNotFound)
	}
	if size != desc.Size {
		return nil, fmt.Errorf("archive: blob %s is %d bytes, its descriptor says %d%.0w", desc.Digest, size, desc.Size, errdefs.ErrInvalidArgument)
	}
	f, err := os.Open(la.file(desc.Digest))
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// manifest reads and parses a manifest of the archive (at most 4 MiB).
func (la *layoutArchive) manifest(d ocispec.Descriptor) (distribution.Manifest, error) {
	size, ok := la.blobs[d.Digest]
	if !ok {
		return distribution.Manifest{}, fmt.Errorf("archive: manifest %s is not in it%.0w", d.Digest, errdefs.ErrNotFound)
	}
	if size > maxArchiveIndex {
		return distribution.Manifest{}, fmt.Errorf("archive: manifest %s is %d bytes, more than %d%.0w", d.Digest, size, maxArchiveIndex, errdefs.ErrInvalidArgument)
	}
	b, err := os.ReadFile(la.file(d.Digest))
	if err != nil {
		return distribution.Manifest{}, err
	}
	if imagespec.IsSchema1(distribution.ManifestMediaType(d, b)) {
		return distribution.Manifest{}, fmt.Errorf("manifest %s is schema1%.0w", d.Digest, errdefs.ErrNotImplemented)
	}
	m, err := distribution.ParseManifest(d, b)
	if err != nil {
		return distribution.Manifest{}, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	return m, nil
}

// plan is what pushing desc writes: the manifest, or the index with every
// manifest it lists (a nested index is refused, as copy refuses it).
func (la *layoutArchive) plan(desc ocispec.Descriptor, includeForeign bool) (*distribution.Plan, error) {
	top, err := la.manifest(desc)
	if err != nil {
		return nil, err
	}
	if !imagespec.IsIndex(top.Desc.MediaType) {
		return distribution.NewPlan(top, []distribution.Manifest{top}, includeForeign), nil
	}
	var idx ocispec.Index
	if err := json.Unmarshal(top.Bytes, &idx); err != nil {
		return nil, fmt.Errorf("archive: index %s: %v%.0w", desc.Digest, err, errdefs.ErrInvalidArgument)
	}
	if len(idx.Manifests) > distribution.MaxPlatformManifests {
		return nil, fmt.Errorf("archive: index %s lists more than %d manifests%.0w", desc.Digest, distribution.MaxPlatformManifests, errdefs.ErrInvalidArgument)
	}
	out := []distribution.Manifest{top}
	for _, d := range idx.Manifests {
		if imagespec.IsIndex(d.MediaType) {
			return nil, fmt.Errorf("index %s names another index (%s): nested indexes are not copied%.0w", desc.Digest, d.Digest, errdefs.ErrNotImplemented)
		}
		m, err := la.manifest(d)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return distribution.NewPlan(top, out, includeForeign), nil
}

package archive

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/ocilayout"
)

const (
	// maxFileEntries caps the members of an archive read in place:
	// 100,000, a docker save of a few hundred images (three or four
	// members a layer); each costs a map entry while the file is open.
	maxFileEntries = 100_000
	// maxFileJSON caps index.json, manifest.json, a manifest and a
	// config read from an archive: 8 MiB, the registry client's config cap
	// (a manifest's is 4 MiB).
	maxFileJSON = 8 << 20
	// maxFileManifests caps the images (or platforms) an archive's index
	// names: 1,000, as a copy's index.
	maxFileManifests = 1000
)

// FileImage is one platform image of a docker-archive or oci-archive file
// on the daemon's host, read in place: the file is an uncompressed tar, so
// every blob is one contiguous section of it, read without loading the
// archive (a diff's archive side). Close releases the file.
type FileImage struct {
	// Manifest is the platform manifest's descriptor; for a docker-archive
	// without an OCI layout, a digest of its manifest.json entry.
	Manifest ocispec.Descriptor
	// Layers bottom first; a docker-archive's "<id>/layer.tar" is named by
	// its diff ID (an uncompressed tar's digest is its diff ID).
	Layers []ocispec.Descriptor
	// Config is the config's bytes, checked against ConfigDescriptor.
	Config           []byte
	ConfigDescriptor ocispec.Descriptor
	// Blobs reads the layers (graph/contents' Blobs).
	Blobs *FileBlobs
}

// Close closes the archive.
func (fi *FileImage) Close() error { return fi.Blobs.close() }

// archiveFile is what the archive is read through: the file, or bytes in
// a test.
type archiveFile interface {
	io.ReadSeeker
	io.ReaderAt
}

// FileBlobs reads the blobs of an archive file as sections of it.
type FileBlobs struct {
	f       archiveFile
	close   func() error
	members map[string]section
	byDesc  map[digest.Digest]string // a layer's digest → its member
}

type section struct{ off, size int64 }

// OpenImage opens the archive at p and chooses its image: the one it
// holds, the platform asked for (else the daemon's) of a multi-platform
// one. An archive of several images, or a compressed one, is refused.
func (s *Archiver) OpenImage(ctx context.Context, p string, platform *ocispec.Platform) (*FileImage, error) {
	want := s.platform
	if platform != nil {
		want = *platform
	}
	return openFileImage(ctx, p, want)
}

func openFileImage(ctx context.Context, p string, want ocispec.Platform) (*FileImage, error) {
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("archive %q: the path must be absolute (the daemon's working directory is not the caller's)%.0w", p, errdefs.ErrInvalidArgument)
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("archive %s: %v%.0w", p, err, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("archive %s: %v%.0w", p, err, errdefs.ErrPermissionDenied)
	}
	fi, err := readFileImage(ctx, f, f.Close, want)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("archive %s: %w", p, err)
	}
	return fi, nil
}

// readFileImage reads the image of the archive f.
func readFileImage(ctx context.Context, f archiveFile, closeFn func() error, want ocispec.Platform) (_ *FileImage, err error) {
	fb := &FileBlobs{f: f, close: closeFn, members: map[string]section{}, byDesc: map[digest.Digest]string{}}
	if err := fb.scan(ctx); err != nil {
		return nil, err
	}
	var fi *FileImage
	if _, ok := fb.members[ocilayout.IndexFile]; ok {
		fi, err = fb.ociImage(want)
	} else {
		fi, err = fb.dockerImage()
	}
	if err != nil {
		return nil, err
	}
	fi.Blobs = fb
	return fi, nil
}

// scan records where each regular member's bytes lie: tar skips data by
// seeking the file, so the scan reads the headers alone.
func (fb *FileBlobs) scan(ctx context.Context) error {
	var head [2]byte
	if _, err := io.ReadFull(fb.f, head[:]); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		return fmt.Errorf("a compressed archive is not read in place: decompress it first%.0w", errdefs.ErrInvalidArgument)
	}
	if _, err := fb.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	tr := tar.NewReader(fb.f)
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the tar: %v%.0w", err, errdefs.ErrInvalidArgument)
		}
		if n >= maxFileEntries {
			return fmt.Errorf("more than %d members%.0w", maxFileEntries, errdefs.ErrInvalidArgument)
		}
		if hdr.Typeflag != tar.TypeReg || hdr.Size < 0 || sparse(hdr) {
			continue
		}
		off, err := fb.f.Seek(0, io.SeekCurrent)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		fb.members[name] = section{off, hdr.Size}
	}
}

// sparse reports a member whose bytes are not contiguous in the tar.
func sparse(hdr *tar.Header) bool {
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// readJSON reads member name (at most maxFileJSON bytes), checked against
// d when d is given.
func (fb *FileBlobs) readJSON(name string, d digest.Digest, v any) ([]byte, error) {
	m, ok := fb.members[name]
	if !ok {
		return nil, fmt.Errorf("no %s%.0w", name, errdefs.ErrNotFound)
	}
	if m.size > maxFileJSON {
		return nil, fmt.Errorf("%s: %d bytes, over %d%.0w", name, m.size, maxFileJSON, errdefs.ErrInvalidArgument)
	}
	b := make([]byte, m.size)
	if _, err := fb.f.ReadAt(b, m.off); err != nil {
		return nil, err
	}
	if d != "" && (d.Validate() != nil || d.Algorithm().FromBytes(b) != d) {
		return nil, fmt.Errorf("%s does not match its digest %s%.0w", name, d, errdefs.ErrDataLoss)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			return nil, fmt.Errorf("%s: %v%.0w", name, err, errdefs.ErrInvalidArgument)
		}
	}
	return b, nil
}

// blob reads a blob of the OCI layout by its descriptor.
func (fb *FileBlobs) blob(d ocispec.Descriptor, v any) ([]byte, error) {
	if d.Digest.Validate() != nil {
		return nil, fmt.Errorf("invalid digest %q%.0w", d.Digest, errdefs.ErrInvalidArgument)
	}
	return fb.readJSON(ocilayout.BlobPath(d.Digest), d.Digest, v)
}

// ociImage chooses the image of an OCI layout: index.json's one entry (an
// index's platform chosen), or its entry of the platform wanted.
func (fb *FileBlobs) ociImage(want ocispec.Platform) (*FileImage, error) {
	var ix ocispec.Index
	if _, err := fb.readJSON(ocilayout.IndexFile, "", &ix); err != nil {
		return nil, err
	}
	descs := ix.Manifests
	for depth := 0; ; depth++ {
		if len(descs) == 0 || len(descs) > maxFileManifests || depth > 2 {
			return nil, fmt.Errorf("index names %d images; a diff reads an archive of one image%.0w", len(descs), errdefs.ErrInvalidArgument)
		}
		d := descs[0]
		if len(descs) > 1 {
			plats := make([]ocispec.Platform, len(descs))
			for i, m := range descs {
				if m.Platform == nil {
					return nil, fmt.Errorf("index names %d images; a diff reads an archive of one image%.0w", len(descs), errdefs.ErrInvalidArgument)
				}
				plats[i] = *m.Platform
			}
			i := imagespec.BestMatch(want, plats)
			if i < 0 {
				return nil, fmt.Errorf("no image for platform %s/%s%.0w", want.OS, want.Architecture, errdefs.ErrNotFound)
			}
			d = descs[i]
		}
		switch d.MediaType {
		case ocispec.MediaTypeImageIndex, "application/vnd.docker.distribution.manifest.list.v2+json":
			var sub ocispec.Index
			if _, err := fb.blob(d, &sub); err != nil {
				return nil, err
			}
			descs = sub.Manifests
			continue
		}
		var m ocispec.Manifest
		if _, err := fb.blob(d, &m); err != nil {
			return nil, err
		}
		cfg, err := fb.blob(m.Config, nil)
		if err != nil {
			return nil, err
		}
		fi := &FileImage{Manifest: ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}, Layers: m.Layers, Config: cfg, ConfigDescriptor: m.Config}
		for _, l := range m.Layers {
			fb.byDesc[l.Digest] = ocilayout.BlobPath(l.Digest)
		}
		return fi, nil
	}
}

// dockerImage reads a docker-archive's manifest.json: its one image, the
// layers named by their blob path's digest or, for "<id>/layer.tar", by
// the config's diff ID.
func (fb *FileBlobs) dockerImage() (*FileImage, error) {
	var entries []struct {
		Config string
		Layers []string
	}
	raw, err := fb.readJSON("manifest.json", "", &entries)
	if err != nil {
		return nil, err
	}
	if len(entries) != 1 {
		return nil, fmt.Errorf("manifest.json names %d images; a diff reads an archive of one image%.0w", len(entries), errdefs.ErrInvalidArgument)
	}
	e := entries[0]
	cfgName := strings.TrimPrefix(path.Clean("/"+e.Config), "/")
	cfgBytes, err := fb.readJSON(cfgName, "", nil)
	if err != nil {
		return nil, err
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
		return nil, fmt.Errorf("config: %v%.0w", err, errdefs.ErrInvalidArgument)
	}
	if len(cfg.RootFS.DiffIDs) != len(e.Layers) {
		return nil, fmt.Errorf("config names %d layers, manifest.json %d%.0w", len(cfg.RootFS.DiffIDs), len(e.Layers), errdefs.ErrInvalidArgument)
	}
	fi := &FileImage{
		Config:           cfgBytes,
		ConfigDescriptor: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cfgBytes), Size: int64(len(cfgBytes))},
		Manifest:         ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(raw), Size: int64(len(raw))},
	}
	for i, l := range e.Layers {
		name := strings.TrimPrefix(path.Clean("/"+l), "/")
		m, ok := fb.members[name]
		if !ok {
			return nil, fmt.Errorf("no layer %s%.0w", name, errdefs.ErrNotFound)
		}
		d, ok := ocilayout.ParseBlobPath(name)
		if !ok {
			d = cfg.RootFS.DiffIDs[i]
		}
		if d.Validate() != nil {
			return nil, fmt.Errorf("layer %s: invalid digest %q%.0w", name, d, errdefs.ErrInvalidArgument)
		}
		fi.Layers = append(fi.Layers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: d, Size: m.size})
		fb.byDesc[d] = name
	}
	return fi, nil
}

func (fb *FileBlobs) section(desc ocispec.Descriptor) (section, error) {
	name, ok := fb.byDesc[desc.Digest]
	if !ok {
		return section{}, fmt.Errorf("blob %s is not a layer of the archive's image%.0w", desc.Digest, errdefs.ErrNotFound)
	}
	m := fb.members[name]
	if m.size != desc.Size {
		return section{}, fmt.Errorf("blob %s: %d bytes in the archive, %d in its descriptor%.0w", desc.Digest, m.size, desc.Size, errdefs.ErrDataLoss)
	}
	return m, nil
}

// Open reads a layer whole; the reader fails at EOF if the bytes do not
// match desc's digest.
func (fb *FileBlobs) Open(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	m, err := fb.section(desc)
	if err != nil {
		return nil, err
	}
	if !desc.Digest.Algorithm().Available() {
		return nil, fmt.Errorf("unsupported digest algorithm in %q%.0w", desc.Digest, errdefs.ErrInvalidArgument)
	}
	return io.NopCloser(&verifying{r: io.NewSectionReader(fb.f, m.off, m.size), want: desc.Digest, v: desc.Digest.Verifier()}), nil
}

// ReadRange reads bytes [off, off+n) of a layer, a section of the file,
// as the store's OpenBlobSection reads a stored blob.
func (fb *FileBlobs) ReadRange(ctx context.Context, desc ocispec.Descriptor, off, n int64) (io.ReadCloser, error) {
	m, err := fb.section(desc)
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off > m.size || n > m.size-off {
		return nil, fmt.Errorf("blob %s: range [%d, +%d) outside its %d bytes%.0w", desc.Digest, off, n, m.size, errdefs.ErrInvalidArgument)
	}
	return io.NopCloser(io.NewSectionReader(fb.f, m.off+off, n)), nil
}

// Local says a layer is a local file: a whole read is cheap.
func (fb *FileBlobs) Local(ocispec.Descriptor) bool { return true }

// verifying hashes what it reads and fails at EOF when the digest differs.
type verifying struct {
	r    io.Reader
	want digest.Digest
	v    digest.Verifier
}

func (v *verifying) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	_, _ = v.v.Write(p[:n])
	if err == io.EOF && !v.v.Verified() {
		return n, fmt.Errorf("blob %s: the archive's bytes do not match%.0w", v.want, errdefs.ErrDataLoss)
	}
	return n, err
}

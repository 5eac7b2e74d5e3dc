package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/internal/decompress"
	"github.com/wharfproject/wharf/internal/ocilayout"
	"github.com/wharfproject/wharf/internal/safetar"
)

// Caps on what an archive for docker load may hold in memory.
const (
	// maxArchiveMetadata caps the small files (JSON) kept in memory (64 MiB
	// in total): a save of a hundred images has well under 1 MiB of them.
	maxArchiveMetadata = 64 << 20
	// maxArchiveEntries caps the entries of one archive (100,000): a docker
	// save of 100 images with 50 layers has about 20,000.
	maxArchiveEntries = 100000
	// maxLinkHops bounds symlink chains inside the archive.
	maxLinkHops = 16
)

// loadArchive is what readArchive staged from a tar: blobs already stored
// (verified) under their archive path, small files in memory, and links.
// Nothing is ever written under a name taken from the archive: blobs go
// through the store by digest only.
type loadArchive struct {
	lease *store.Lease // pins every blob the archive stages or names
	files map[string][]byte
	blobs map[string]ocispec.Descriptor
	links map[string]string
	meta  int64

	// platform chooses an index's manifest; strict (asked for by the
	// client) refuses an image not stored for it.
	platform ocispec.Platform
	strict   bool
	// platforms are all the client named (API 1.52 sends several): an
	// index's entries for them are loaded, and an image matching none is
	// refused.
	platforms []ocispec.Platform

	budget  *decompress.Budget             // shared by every DiffID computation of the load
	diffIDs map[digest.Digest]diffIDResult // layer digest → DiffID, computed once
}

// readArchive reads a docker-save or OCI-layout tar (plain or compressed).
// Entries whose names are absolute or contain "..", and links whose targets
// leave the archive, make the whole archive InvalidArgument.
func (s *Archiver) readArchive(ctx context.Context, lease *store.Lease, r io.Reader) (*loadArchive, error) {
	a := &loadArchive{lease: lease, files: map[string][]byte{}, blobs: map[string]ocispec.Descriptor{}, links: map[string]string{}}
	stream, err := decompress.Stream(bufio.NewReaderSize(r, 64<<10), s.bombLimit)
	if err != nil {
		return a, err
	}
	// ocilayout's reader: no sparse entry, and no more entry data than
	// archive bytes read, so what is staged is bounded by what the client
	// sent.
	tr := ocilayout.NewReader(stream)
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return a, err
		}
		if n >= maxArchiveEntries {
			return a, fmt.Errorf("invalid archive: more than %d entries%.0w", maxArchiveEntries, errdefs.ErrInvalidArgument)
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			return a, nil
		}
		if errors.Is(err, safetar.ErrSparse) {
			return a, fmt.Errorf("invalid archive: %w", err)
		}
		if err != nil {
			return a, invalidTar(err)
		}
		name, err := cleanArchiveName(hdr.Name)
		if err != nil {
			return a, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeSymlink:
			if path.IsAbs(hdr.Linkname) {
				return a, fmt.Errorf("invalid archive: symlink %q points outside the archive (%q)%.0w", hdr.Name, hdr.Linkname, errdefs.ErrInvalidArgument)
			}
			target := path.Join(path.Dir(name), hdr.Linkname)
			if target == ".." || strings.HasPrefix(target, "../") || target == "." {
				return a, fmt.Errorf("invalid archive: symlink %q points outside the archive (%q)%.0w", hdr.Name, hdr.Linkname, errdefs.ErrInvalidArgument)
			}
			a.links[name] = target
		case tar.TypeLink:
			target, err := cleanArchiveName(hdr.Linkname)
			if err != nil {
				return a, fmt.Errorf("invalid archive: hard link %q: %w", hdr.Name, err)
			}
			a.links[name] = target
		case tar.TypeReg, tar.TypeRegA:
			if err := s.stageFile(ctx, a, name, hdr, tr); err != nil {
				return a, err
			}
		default:
			// Devices, fifos: nothing an image archive needs; skipped.
		}
	}
}

// stageFile stores one regular file: blobs/<alg>/<hex> as the blob it
// names (verified), layer tars as blobs by their computed digest, small
// files in memory; anything else is skipped.
func (s *Archiver) stageFile(ctx context.Context, a *loadArchive, name string, hdr *tar.Header, r io.Reader) error {
	if d, ok := blobName(name); ok {
		desc := ocispec.Descriptor{Digest: d, Size: hdr.Size}
		if _, err := a.lease.WriteBlob(ctx, desc, r); err != nil {
			return fmt.Errorf("invalid archive: %s: %w", name, err)
		}
		a.blobs[name] = desc
		return nil
	}
	if strings.HasSuffix(name, ".tar") || strings.HasSuffix(name, ".tar.gz") {
		w, err := a.lease.Ingest(digest.SHA256)
		if err != nil {
			return err
		}
		defer w.Abort()
		if _, err := store.CopyCtx(ctx, w, io.LimitReader(r, hdr.Size)); err != nil {
			return invalidTar(err)
		}
		d, _, err := w.Commit(hdr.Size, "")
		if err != nil {
			return invalidTar(err)
		}
		a.blobs[name] = ocispec.Descriptor{Digest: d, Size: hdr.Size}
		return nil
	}
	limit := int64(store.MaxConfigSize)
	if name == "manifest.json" || name == store.IndexFile {
		limit = store.MaxManifestSize
	}
	if hdr.Size > limit {
		if name == "manifest.json" || name == store.IndexFile || strings.HasSuffix(name, ".json") || strings.HasSuffix(name, "/json") {
			return fmt.Errorf("invalid archive: %s too large: %d bytes > %d%.0w", name, hdr.Size, limit, errdefs.ErrInvalidArgument)
		}
		return nil // not metadata; skipped
	}
	if a.meta+hdr.Size > maxArchiveMetadata {
		return fmt.Errorf("invalid archive: more than %d bytes of metadata%.0w", maxArchiveMetadata, errdefs.ErrInvalidArgument)
	}
	b := make([]byte, hdr.Size)
	if _, err := io.ReadFull(r, b); err != nil {
		return invalidTar(err)
	}
	a.meta += hdr.Size
	a.files[name] = b
	return nil
}

// cleanArchiveName refuses absolute names and ".." components and returns
// the cleaned relative name ("./manifest.json" → "manifest.json").
func cleanArchiveName(name string) (string, error) {
	if name == "" || path.IsAbs(name) || strings.HasPrefix(name, "\\") || hasDotDot(name) {
		return "", fmt.Errorf("invalid archive: entry %q escapes the archive root%.0w", name, errdefs.ErrInvalidArgument)
	}
	return path.Clean(name), nil
}

// blobName parses "blobs/<alg>/<hex>" into a digest the store takes.
func blobName(name string) (digest.Digest, bool) {
	d, ok := ocilayout.ParseBlobPath(name)
	if !ok || store.ValidateDigest(d) != nil {
		return "", false
	}
	return d, true
}

// resolve follows links from name to a staged file or blob.
func (a *loadArchive) resolve(name string) (string, error) {
	n, err := cleanArchiveName(name)
	if err != nil {
		return "", err
	}
	for i := 0; i < maxLinkHops; i++ {
		t, ok := a.links[n]
		if !ok {
			return n, nil
		}
		n = t
	}
	return "", fmt.Errorf("invalid archive: too many links resolving %q%.0w", name, errdefs.ErrInvalidArgument)
}

// archiveContent returns the bytes of the archive file name (≤ max).
func (s *Archiver) archiveContent(a *loadArchive, name string, max int64) ([]byte, error) {
	l := s.st
	n, err := a.resolve(name)
	if err != nil {
		return nil, err
	}
	if b, ok := a.files[n]; ok {
		if int64(len(b)) > max {
			return nil, fmt.Errorf("invalid archive: %s too large%.0w", name, errdefs.ErrInvalidArgument)
		}
		return b, nil
	}
	if d, ok := a.blobs[n]; ok {
		return l.ReadBlob(d.Digest, max)
	}
	return nil, fmt.Errorf("invalid archive: %s not found%.0w", name, errdefs.ErrInvalidArgument)
}

// archiveBlob returns the stored blob for the archive file name, storing
// a small in-memory file as a blob when needed.
func (s *Archiver) archiveBlob(ctx context.Context, a *loadArchive, name string) (ocispec.Descriptor, error) {
	n, err := a.resolve(name)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if d, ok := a.blobs[n]; ok {
		return d, nil
	}
	if b, ok := a.files[n]; ok {
		d := ocispec.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
		if _, err := a.lease.WriteBlob(ctx, d, bytes.NewReader(b)); err != nil {
			return d, err
		}
		a.blobs[n] = d
		return d, nil
	}
	return ocispec.Descriptor{}, fmt.Errorf("invalid archive: %s not found%.0w", name, errdefs.ErrInvalidArgument)
}

package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/decompress"
)

// ImportImage answers POST /images/create?fromSrc=-: the body is a rootfs
// tar (plain, gzip or bzip2), stored as one gzip layer (digest of the
// compressed bytes; DiffID = sha256 of the tar), with an OCI config (the
// changes applied, the message as comment) and an OCI manifest. The stream
// gets {"status":"sha256:<id>"} as from dockerd. The tar is validated, never
// extracted.
func (s *Archiver) ImportImage(ctx context.Context, src io.Reader, opts types.ImportOptions, out types.ProgressWriter) error {
	var ref reference.NamedTagged
	if opts.Repo != "" {
		var err error
		if ref, err = store.ParseNewTag(opts.Repo, opts.Tag); err != nil {
			return err
		}
	}
	var cfg dockerspec.DockerOCIImageConfig
	if err := applyChanges(&cfg, opts.Changes); err != nil {
		return err
	}
	p := s.platform
	if opts.Platform != nil && opts.Platform.OS != "" {
		p = *opts.Platform
	}
	if p.OS == "" {
		p = ocispec.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
	}
	lease := s.st.NewLease()
	defer lease.Release()
	layer, diffID, err := s.ingestRootfs(ctx, lease, src)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	img := store.ImageConfig{Comment: opts.Message}
	img.Created = &now
	img.Platform = ocispec.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant, OSVersion: p.OSVersion}
	img.RootFS = ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}}
	img.History = []ocispec.History{{Created: &now, Comment: opts.Message}}
	img.Config = cfg
	rec, err := s.storeImage(ctx, lease, &img, []ocispec.Descriptor{layer}, false)
	if err != nil {
		return err
	}
	if ref != nil {
		rec.RepoTags = []string{ref.String()}
		rec.LastTagTime = now
	}
	if err := s.st.Put(lease, *rec); err != nil {
		return err
	}
	id := rec.ID.String()
	var evs []store.Event
	if ref != nil {
		evs = append(evs, store.NewEvent(id, events.ActionTag, reference.FamiliarString(ref), cfg.Labels))
	}
	evs = append(evs, store.NewEvent(id, events.ActionImport, id, cfg.Labels))
	store.Emit(ctx, s.events, evs...)
	return out.WriteMessage(jsonstream.Message{Status: id})
}

// storeImage writes the config and a manifest for layers (stored already)
// and returns the record to put (no references yet). docker=true writes a
// Docker schema2 manifest and config media type, else OCI.
func (s *Archiver) storeImage(ctx context.Context, lease *store.Lease, img *store.ImageConfig, layers []ocispec.Descriptor, docker bool) (*store.ImageRecord, error) {
	cb, err := json.Marshal(img)
	if err != nil {
		return nil, err
	}
	return s.storeManifest(ctx, lease, cb, layers, docker)
}

// storeManifest stores config bytes cb and a manifest naming them and layers.
func (s *Archiver) storeManifest(ctx context.Context, lease *store.Lease, cb []byte, layers []ocispec.Descriptor, docker bool) (*store.ImageRecord, error) {
	cdesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cb), Size: int64(len(cb))}
	mt := ocispec.MediaTypeImageManifest
	if docker {
		cdesc.MediaType, mt = imagespec.MediaTypeDockerConfig, imagespec.MediaTypeDockerManifest
	}
	if _, err := lease.WriteBlob(ctx, cdesc, bytes.NewReader(cb)); err != nil {
		return nil, err
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: mt, Config: cdesc, Layers: layers}
	if m.Layers == nil {
		m.Layers = []ocispec.Descriptor{}
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	mdesc := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(mb), Size: int64(len(mb))}
	if _, err := lease.WriteBlob(ctx, mdesc, bytes.NewReader(mb)); err != nil {
		return nil, err
	}
	return &store.ImageRecord{ID: cdesc.Digest, Target: mdesc, Manifest: mdesc, RepoTags: []string{}, RepoDigests: []string{}}, nil
}

// ingestRootfs stores the rootfs tar r as a gzip layer blob and returns its
// descriptor and DiffID. Garbage and tars with ".." entries are
// InvalidArgument.
func (s *Archiver) ingestRootfs(ctx context.Context, lease *store.Lease, r io.Reader) (ocispec.Descriptor, digest.Digest, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	tarStream, err := decompress.Stream(br, s.bombLimit)
	if err != nil {
		return ocispec.Descriptor{}, "", err
	}
	w, err := lease.Ingest(digest.SHA256)
	if err != nil {
		return ocispec.Descriptor{}, "", err
	}
	defer w.Abort()
	gz := gzip.NewWriter(w)
	diff := digest.SHA256.Digester()
	counted := decompress.NewCounter(tarStream)
	tee := io.TeeReader(counted, io.MultiWriter(diff.Hash(), gz))
	if err := validateRootfsTar(ctx, tee); err != nil {
		return ocispec.Descriptor{}, "", err
	}
	// The DiffID covers the whole uncompressed stream, padding included.
	if _, err := store.CopyCtx(ctx, io.Discard, tee); err != nil {
		return ocispec.Descriptor{}, "", invalidTar(err)
	}
	if counted.N() == 0 {
		return ocispec.Descriptor{}, "", fmt.Errorf("import: empty input, expected a tar archive%.0w", errdefs.ErrInvalidArgument)
	}
	if err := gz.Close(); err != nil {
		return ocispec.Descriptor{}, "", err
	}
	size := w.Size()
	dgst, _, err := w.Commit(-1, "")
	if err != nil {
		return ocispec.Descriptor{}, "", err
	}
	return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: dgst, Size: size}, diff.Digest(), nil
}

// validateRootfsTar reads every entry header of a rootfs tar and refuses names or
// hard-link targets that climb out with "..". Absolute names are cleaned
// (as dockerd does when it applies a layer), so they pass.
func validateRootfsTar(ctx context.Context, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return invalidTar(err)
		}
		if hasDotDot(hdr.Name) {
			return fmt.Errorf("invalid tar entry %q: path escapes the root%.0w", hdr.Name, errdefs.ErrInvalidArgument)
		}
		if hdr.Typeflag == tar.TypeLink && hasDotDot(hdr.Linkname) {
			return fmt.Errorf("invalid tar entry %q: hard link to %q escapes the root%.0w", hdr.Name, hdr.Linkname, errdefs.ErrInvalidArgument)
		}
		// The entry's data is not read here: Next skips it by its size in
		// the archive. Reading it would expand a sparse entry (archive/tar
		// returns its holes as zeros), whose declared size is unbounded,
		// for nothing: the layer stored is the stream as sent.
	}
}

func hasDotDot(name string) bool {
	for _, part := range strings.Split(strings.ReplaceAll(name, "\\", "/"), "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

func invalidTar(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("invalid tar archive: %v%.0w", err, errdefs.ErrInvalidArgument)
}

package mirror

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/internal/ocilayout"
)

// Across an air gap: the selected images as one OCI image layout in a tar
// (oci-layout, blobs/<alg>/<hex>, index.json last), streamed to the client
// (SyncExport), and such a tar streamed from the client into a registry
// (SyncImport). The archive travels in the HTTP bodies, as save and load
// do: the daemon writes no file on an export, and on an import only under
// its data-root (ingest/, which it empties at start).
//
// index.json names each image by org.opencontainers.image.ref.name =
// "<repository path>:<tag>" (skopeo copy oci-archive:FILE:path:tag and
// oras take it), and by io.wharf.sync.repository = host/path, from which
// an import names the destination as a sync does (--scoped keeps the
// host). Referrers (--with-referrers) are entries without a ref name, or
// with their cosign tag as one, and io.wharf.sync.subject.

const (
	annotationSyncRepository = "io.wharf.sync.repository"
	annotationSyncSubject    = "io.wharf.sync.subject"
)

// Bounds of an archive read on import: index.json is a manifest-sized
// document (4 MiB); an archive holds at most maxSyncImages images.
const maxArchiveIndex = 4 << 20

// SyncExport writes the images opts selects as an OCI layout tar to w and
// returns the summary. A failure before an image's first byte is written
// is that image's (KeepGoing goes on); a failure while a blob streams
// breaks the tar, and is returned: the archive is then incomplete (no
// index.json), which every reader refuses.
func (m *Mirror) SyncExport(ctx context.Context, opts types.SyncOptions, w io.Writer) (*types.SyncSummary, error) {
	// The per-image events of an export go nowhere: the body is the tar;
	// the summary (with every failure) is the answer's trailer.
	r, global, err := m.newSyncRun(opts, func(types.SyncEvent) error { return nil })
	if err != nil {
		return nil, err
	}
	items, err := r.plan(ctx, global, "", "")
	if err != nil {
		return nil, err
	}
	r.sum.Images = len(items)
	aw := &archiveWriter{lw: ocilayout.NewWriter(w, time.Unix(0, 0), tar.FormatPAX), seen: map[digest.Digest]bool{}}
	if err := aw.lw.Layout(); err != nil {
		return nil, broken(err)
	}
	for i, it := range items {
		if r.stopped() {
			r.sum.NotRun = len(items) - i
			break
		}
		if err := r.exportOne(ctx, it, aw); err != nil {
			return nil, err
		}
	}
	idx := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: aw.index}
	if idx.Manifests == nil {
		idx.Manifests = []ocispec.Descriptor{}
	}
	if err := aw.lw.Index(idx); err != nil {
		return nil, broken(err)
	}
	if err := aw.lw.Close(); err != nil {
		return nil, err
	}
	sum := r.sum
	return &sum, nil
}

// exportOne writes one image (and its referrers) into aw. Errors of the
// image are recorded (nil returned); an error from the stream is
// returned.
func (r *syncRun) exportOne(ctx context.Context, it syncItem, aw *archiveWriter) error {
	ev := types.SyncEvent{Source: it.srcRef(), Destination: "oci-archive:" + reference.Path(it.srcName) + ":" + it.tag}
	if err := r.waitRateLimit(ctx, reference.Domain(it.srcName)); err != nil {
		r.fail(it.srcRef(), "resolve-source", err, ev)
		return nil
	}
	top, _, err := r.sourceDigest(ctx, it)
	if err != nil {
		r.fail(it.srcRef(), "resolve-source", err, ev)
		return nil
	}
	res, err := it.src.FetchTop(ctx, top.String())
	if err != nil {
		r.fail(it.srcRef(), "resolve-source", err, ev)
		return nil
	}
	plan, err := r.m.dist.ImagePlan(ctx, res, r.platform, r.opts.IncludeForeign)
	if err != nil {
		r.fail(it.srcRef(), "resolve-source", err, ev)
		return nil
	}
	planTop := plan.Top()
	ev.Digest = planTop.Desc.Digest.String()
	if r.opts.DryRun {
		ev.Status = types.SyncPlanned
		r.sum.Planned++
		r.emit(ev)
		return nil
	}
	var refs []distribution.Manifest
	var refOf []distribution.Referrer
	if r.opts.WithReferrers {
		refs, refOf, err = distribution.PlanReferrers(ctx, res, plan)
		if err != nil {
			r.fail(it.srcRef(), "referrers", err, ev)
			return nil
		}
	}
	src := it.src
	var res2 types.CopyResult
	write := func(p *distribution.Plan) error {
		blobs := p.Blobs()
		res2.Blobs += len(blobs)
		for _, d := range blobs {
			n, err := aw.blob(ctx, d, func(ctx context.Context) (io.ReadCloser, error) { return src.OpenBlobAt(ctx, d, 0) })
			if err != nil {
				return err
			}
			if n {
				res2.Uploaded++
				res2.BytesUploaded += d.Size
			} else {
				res2.Existed++
			}
		}
		for _, m := range p.Manifests() {
			if _, err := aw.bytes(m.Desc.Digest, m.Bytes); err != nil {
				return err
			}
		}
		return nil
	}
	if err := write(plan); err != nil {
		if errors.Is(err, errArchiveBroken) {
			return err
		}
		r.fail(it.srcRef(), "copy", err, ev)
		return nil
	}
	if _, err := aw.bytes(planTop.Desc.Digest, planTop.Bytes); err != nil {
		return err
	}
	desc := planTop.Desc
	desc.Annotations = map[string]string{
		ocispec.AnnotationRefName: reference.Path(it.srcName) + ":" + it.tag,
		annotationSyncRepository:  it.srcName.String(),
	}
	aw.index = append(aw.index, desc)
	if len(refs) > 0 {
		rp := distribution.NewPlan(distribution.Manifest{}, refs, r.opts.IncludeForeign)
		if err := write(rp); err != nil {
			if errors.Is(err, errArchiveBroken) {
				return err
			}
			r.fail(it.srcRef(), "referrers", err, ev)
			return nil
		}
		for i, m := range refs {
			d := m.Desc
			d.ArtifactType = artifactTypeOf(m.Manifest)
			d.Annotations = map[string]string{annotationSyncRepository: it.srcName.String(), annotationSyncSubject: refOf[i].Subject.String()}
			if refOf[i].Tag != "" {
				d.Annotations[ocispec.AnnotationRefName] = reference.Path(it.srcName) + ":" + refOf[i].Tag
			}
			aw.index = append(aw.index, d)
			res2.Referrers++
		}
	}
	r.synced(ev, res2, reference.Domain(it.srcName)) // res2.Mounted is 0: nothing mounts into an archive
	return nil
}

// artifactTypeOf is a manifest's artifact type: its own, else its
// config's media type (the image-spec's rule for the referrers API).
func artifactTypeOf(m ocispec.Manifest) string {
	if m.ArtifactType != "" {
		return m.ArtifactType
	}
	return m.Config.MediaType
}

// errArchiveBroken marks a failure after a tar entry's header went out:
// the stream cannot go on.
var errArchiveBroken = errors.New("the archive stream broke")

// broken marks err, from the tar stream, as breaking it.
func broken(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", errArchiveBroken, err)
}

// archiveWriter writes an OCI layout into a tar, each blob once.
type archiveWriter struct {
	lw    *ocilayout.Writer
	seen  map[digest.Digest]bool
	index []ocispec.Descriptor
}

// bytes writes b as the blob d unless written already (true when written).
func (aw *archiveWriter) bytes(d digest.Digest, b []byte) (bool, error) {
	if aw.seen[d] {
		return false, nil
	}
	if digest.FromBytes(b) != d && d.Algorithm() == digest.SHA256 {
		return false, fmt.Errorf("manifest %s does not hash to its digest%.0w", d, distribution.ErrDigestMismatch)
	}
	if err := aw.lw.File(ocilayout.BlobPath(d), b); err != nil {
		return false, broken(err)
	}
	aw.seen[d] = true
	return true, nil
}

// blob streams desc from open unless written already. The source is
// opened before the header goes out, so a source that refuses leaves the
// tar whole; one that breaks mid-body (after the resuming reader gave up)
// or does not verify breaks it (errArchiveBroken).
func (aw *archiveWriter) blob(ctx context.Context, desc ocispec.Descriptor, open func(context.Context) (io.ReadCloser, error)) (bool, error) {
	if aw.seen[desc.Digest] {
		return false, nil
	}
	if err := desc.Digest.Validate(); err != nil {
		return false, fmt.Errorf("blob %q: %v%.0w", desc.Digest, err, distribution.ErrUpstream)
	}
	rc, err := open(ctx)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	if err := aw.lw.Blob(ctx, desc.Digest, desc.Size, rc); err != nil {
		return false, broken(err)
	}
	aw.seen[desc.Digest] = true
	return true, nil
}

package mirror

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/ocilayout"
	"github.com/wharfproject/wharf/registry"
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
	var refOf []registry.Referrer
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
		return false, fmt.Errorf("manifest %s does not hash to its digest%.0w", d, registry.ErrDigestMismatch)
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
		return false, fmt.Errorf("blob %q: %v%.0w", desc.Digest, err, registry.ErrUpstream)
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

// SyncImport reads an OCI layout tar from body into a directory under the
// data-root's ingest/ (removed at the end; a crash leaves it to the store's
// start, which empties ingest/), then pushes every image its index.json
// names to opts.Destination, as a sync does: HEAD the tag there, skip when
// equal, else every blob through TransferBlob (HEAD, mount, upload from
// the file) and the manifests after them. Referrers in the archive follow
// their subject (PushReferrer).
func (m *Mirror) SyncImport(ctx context.Context, opts types.SyncOptions, body io.Reader, emit func(types.SyncEvent) error) error {
	if m.root == "" {
		return fmt.Errorf("an import needs the daemon's data-root%.0w", errdefs.ErrUnavailable)
	}
	r, global, err := m.newSyncRun(opts, emit)
	if err != nil {
		return err
	}
	dstHost, dstPath, err := splitSyncDestination(opts.Destination)
	if err != nil {
		return err
	}
	if err := m.dist.AdmitOCIArchive(ctx, "sync import"); err != nil {
		return err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	dir := filepath.Join(m.root, "ingest", "sync-import-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	la, err := readLayoutArchive(body, dir)
	if err != nil {
		return err
	}
	type image struct {
		desc ocispec.Descriptor
		src  reference.Named
		tag  string
	}
	var images []image
	refsOf := map[string][]ocispec.Descriptor{} // repository → referrer entries
	for _, d := range la.index.Manifests {
		repo, tag, err := archiveEntryName(d)
		if err != nil {
			return err
		}
		if d.Annotations[annotationSyncSubject] != "" {
			refsOf[repo.String()] = append(refsOf[repo.String()], d)
			continue
		}
		if tag == "" {
			continue // an untagged entry names no image to sync
		}
		images = append(images, image{d, repo, tag})
	}
	f := tagFilter{regexes: global.regexes, ranges: global.ranges, latest: opts.Latest}
	byRepo := map[string][]image{}
	var order []string
	for _, im := range images {
		k := im.src.String()
		if _, ok := byRepo[k]; !ok {
			order = append(order, k)
		}
		byRepo[k] = append(byRepo[k], im)
	}
	var selected []image
	for _, k := range order {
		var tags []string
		ims := map[string]image{}
		for _, im := range byRepo[k] {
			tags = append(tags, im.tag)
			ims[im.tag] = im
		}
		for _, t := range f.apply(tags) {
			selected = append(selected, ims[t])
		}
	}
	r.sum.Images = len(selected)
	for i, im := range selected {
		if r.stopped() {
			r.sum.NotRun = len(selected) - i
			break
		}
		dstName, err := syncDestinationName(dstHost, dstPath, im.src, opts.Scoped)
		if err != nil {
			return err
		}
		dst, err := r.svc.Repository(ctx, dstName, r.creds)
		if err != nil {
			return err
		}
		r.importOne(ctx, la, dst, dstName, im.src, im.tag, im.desc, refsOf[im.src.String()])
	}
	sum := r.sum
	return emit(types.SyncEvent{Summary: &sum})
}

// importOne pushes one image of the archive and the referrers of its
// manifests.
func (r *syncRun) importOne(ctx context.Context, la *layoutArchive, dst *registry.Repository, dstName, src reference.Named, tag string, desc ocispec.Descriptor, refs []ocispec.Descriptor) {
	image := "oci-archive:" + reference.Path(src) + ":" + tag
	ev := types.SyncEvent{Source: image, Destination: dstName.String() + ":" + tag, Digest: desc.Digest.String()}
	ans, err := dst.HeadTag(ctx, tag, 0)
	switch {
	case err == nil:
		ev.DestinationDigest = ans.Descriptor.Digest.String()
		if ans.Descriptor.Digest == desc.Digest {
			ev.Status = types.SyncSkipped
			r.sum.Skipped++
			r.m.dist.ObserveSync("oci-archive", types.SyncSkipped)
			r.emit(ev)
			return
		}
	case errdefs.IsNotFound(err):
	default:
		r.fail(image, "resolve-destination", err, ev)
		return
	}
	if r.opts.DryRun {
		ev.Status = types.SyncPlanned
		r.sum.Planned++
		r.emit(ev)
		return
	}
	if ev.DestinationDigest != "" && r.backup != nil {
		it := syncItem{dst: dst, dstName: dstName, tag: tag}
		bt, err := r.keepBackup(ctx, it, ans.Descriptor)
		if err != nil {
			r.fail(image, "backup", err, ev)
			return
		}
		ev.Backup = bt
		r.sum.Backups++
	}
	plan, err := la.plan(desc, r.opts.IncludeForeign)
	if err != nil {
		r.fail(image, "resolve-source", err, ev)
		return
	}
	var res types.CopyResult
	// Blobs counts what was moved, as CopyImage's result does, so that it
	// adds up to Existed+Mounted+Uploaded.
	res.Blobs = len(plan.Blobs())
	if err := distribution.PushPlan(ctx, plan, la.open, dst, tag, &res); err != nil {
		r.fail(image, "copy", err, ev)
		return
	}
	subjects := map[string]bool{}
	for _, m := range plan.Manifests() {
		subjects[m.Desc.Digest.String()] = true
	}
	for _, rd := range refs {
		if !subjects[rd.Annotations[annotationSyncSubject]] {
			continue
		}
		m, err := la.manifest(rd)
		if err != nil {
			r.fail(image, "referrers", err, ev)
			return
		}
		cosignTag := ""
		if _, tag, err := archiveEntryName(rd); err == nil {
			cosignTag = tag
		}
		// Listed for its subject: a manifest naming another would be
		// attached to it at DST. Without a subject field (cosign's legacy
		// signatures) its tag must be the subject's cosign tag.
		subject := rd.Annotations[annotationSyncSubject]
		if !referrerOf(m, cosignTag, subject) {
			r.fail(image, "referrers", fmt.Errorf("archive: referrer %s does not refer to %s, the subject it is listed for%.0w", rd.Digest, subject, errdefs.ErrInvalidArgument), ev)
			return
		}
		rp := distribution.NewPlan(distribution.Manifest{}, []distribution.Manifest{m}, r.opts.IncludeForeign)
		res.Blobs += len(rp.Blobs())
		if err := distribution.PushBlobs(ctx, rp, la.open, dst, &res); err != nil {
			r.fail(image, "referrers", err, ev)
			return
		}
		if _, err := dst.PushReferrer(ctx, m.Desc, m.Bytes, cosignTag); err != nil {
			r.fail(image, "referrers", err, ev)
			return
		}
		res.Referrers++
	}
	r.synced(ev, res, "oci-archive")
}

// referrerOf says whether m, listed under cosignTag ("" for none), refers
// to subject: by its subject field, else by its cosign tag.
func referrerOf(m distribution.Manifest, cosignTag, subject string) bool {
	if m.Manifest.Subject != nil {
		return m.Manifest.Subject.Digest.String() == subject
	}
	d, err := digest.Parse(subject)
	if err != nil || cosignTag == "" {
		return false
	}
	base := string(d.Algorithm()) + "-" + d.Encoded()
	for _, suffix := range []string{".sig", ".att", ".sbom"} {
		if cosignTag == base+suffix {
			return true
		}
	}
	return false
}

// archiveEntryName is an index.json entry's repository and tag: from
// io.wharf.sync.repository and the ref name's tag, else from the ref name
// alone ("path:tag", as skopeo and oras write it; the repository is then
// taken as on no registry host, and --scoped places it under "oci-archive").
func archiveEntryName(d ocispec.Descriptor) (reference.Named, string, error) {
	refName := d.Annotations[ocispec.AnnotationRefName]
	tag := ""
	path := ""
	if i := strings.LastIndex(refName, ":"); i > 0 && !strings.Contains(refName[i:], "/") {
		path, tag = refName[:i], refName[i+1:]
	} else if refName != "" {
		tag = refName // a bare tag, as `oras cp --to-oci-layout` writes
	}
	if tag != "" && !validTag.MatchString(tag) {
		return nil, "", fmt.Errorf("archive: entry %s has ref name %q, which does not end in a tag%.0w", d.Digest, refName, errdefs.ErrInvalidArgument)
	}
	if repo := d.Annotations[annotationSyncRepository]; repo != "" {
		n, err := reference.ParseNormalizedNamed(repo)
		if err != nil {
			return nil, "", fmt.Errorf("archive: entry %s: repository %q: %v%.0w", d.Digest, repo, err, errdefs.ErrInvalidArgument)
		}
		return reference.TrimNamed(n), tag, nil
	}
	if path == "" {
		path = "image"
	}
	n, err := reference.ParseNormalizedNamed("oci-archive/" + path)
	if err != nil {
		return nil, "", fmt.Errorf("archive: entry %s: ref name %q: %v%.0w", d.Digest, refName, err, errdefs.ErrInvalidArgument)
	}
	return reference.TrimNamed(n), tag, nil
}

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

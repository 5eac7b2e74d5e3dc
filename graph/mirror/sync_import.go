package mirror

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/imagespec"
)

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
		dst, err := r.repository(ctx, dstName)
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
func (r *syncRun) importOne(ctx context.Context, la *layoutArchive, dst *distribution.Repository, dstName, src reference.Named, tag string, desc ocispec.Descriptor, refs []ocispec.Descriptor) {
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
	if tag != "" && !imagespec.ValidTag(tag) {
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

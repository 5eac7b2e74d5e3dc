package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/imagespec"
)

// Sync (POST /wharf/images/sync) mirrors whole repositories: a plan —
// list each source's tags (a namespace's repositories through the
// catalog), filter them, HEAD the tag on both sides — then, for each image
// whose digests differ, the one-image copy (CopyImage), pinned to the
// digest the HEAD saw. An image the destination already has costs one
// HEAD on each side and nothing else, so a sync with nothing to do moves
// no body.

// maxConcurrentSyncImages bounds the images one sync works on at a time:
// the HEADs of 4 tags in flight, or 4 copies each moving at most
// maxConcurrentCopies blobs — at most 16 transfers and 4 manifest requests
// per registry, about what crane (4) and skopeo (6 layers) open for one
// image, times the 4 images. regsync's default is 3 parallel images.
const maxConcurrentSyncImages = 4

// maxSyncSources bounds the sources of one request (a YAML of 1,000
// repositories is already a large mirror) and maxSyncImages the images one
// sync plans (each is held as ~200 bytes until done).
const (
	maxSyncSources = 1000
	maxSyncImages  = 100_000
)

// syncItem is one image of the plan.
type syncItem struct {
	src     *distribution.Repository
	srcName reference.Named
	dst     *distribution.Repository
	dstName reference.Named
	tag     string
}

func (it syncItem) srcRef() string { return it.srcName.String() + ":" + it.tag }

func (it syncItem) dstRef() string {
	if it.dstName == nil {
		return ""
	}
	return it.dstName.String() + ":" + it.tag
}

// SyncImages runs a sync, emitting one event per image (and per pause) as
// it goes and a summary last. Errors before the plan is made (arguments, a
// source that cannot be listed without KeepGoing) are returned; a failed
// image is an event and a line of the summary, never the error returned.
func (m *Mirror) SyncImages(ctx context.Context, opts types.SyncOptions, emit func(types.SyncEvent) error) error {
	r, global, err := m.newSyncRun(opts, emit)
	if err != nil {
		return err
	}
	dstHost, dstPath, err := splitSyncDestination(opts.Destination)
	if err != nil {
		return err
	}
	items, err := r.plan(ctx, global, dstHost, dstPath)
	if err != nil {
		return err
	}
	r.sum.Images = len(items)
	r.run(ctx, items)
	r.mu.Lock()
	sum := r.sum
	r.mu.Unlock()
	return emit(types.SyncEvent{Summary: &sum})
}

// newSyncRun checks opts (all but the destination) and makes the run with
// its global tag filter.
func (m *Mirror) newSyncRun(opts types.SyncOptions, emit func(types.SyncEvent) error) (*syncRun, tagFilter, error) {
	if err := m.dist.RequireRegistry(); err != nil {
		return nil, tagFilter{}, err
	}
	if len(opts.Sources) > maxSyncSources {
		return nil, tagFilter{}, fmt.Errorf("sync takes at most %d sources, not %d%.0w", maxSyncSources, len(opts.Sources), errdefs.ErrInvalidArgument)
	}
	if opts.Latest < 0 {
		return nil, tagFilter{}, fmt.Errorf("latest must not be negative%.0w", errdefs.ErrInvalidArgument)
	}
	var platform *ocispec.Platform
	if opts.Platform != "" {
		p, err := imagespec.ParsePlatform(opts.Platform)
		if err != nil {
			return nil, tagFilter{}, err
		}
		platform = &p
	}
	backup, err := parseBackupTemplate(opts.Backup)
	if err != nil {
		return nil, tagFilter{}, err
	}
	var global tagFilter
	if err := global.add(opts.TagRegex, opts.Semver); err != nil {
		return nil, tagFilter{}, err
	}
	r := &syncRun{m: m, opts: opts, platform: platform, backup: backup, emitFn: emit, pauses: map[string]*sync.Mutex{}}
	return r, global, nil
}

// syncRun is one sync under way.
type syncRun struct {
	m        *Mirror
	opts     types.SyncOptions
	platform *ocispec.Platform
	backup   *backupTemplate

	mu     sync.Mutex // emitFn, sum, stop
	emitFn func(types.SyncEvent) error
	sum    types.SyncSummary
	stop   bool  // a failure without KeepGoing: start no more images
	werr   error // the client went away

	pmu    sync.Mutex
	pauses map[string]*sync.Mutex // per registry: one waits out a pause, the others after it
}

// repository is name's repository, reached with the request's credentials.
func (r *syncRun) repository(ctx context.Context, name reference.Named) (*distribution.Repository, error) {
	return r.m.dist.Repository(ctx, name, r.opts.Auth, r.opts.MetaHeaders)
}

func (r *syncRun) emit(ev types.SyncEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.werr != nil {
		return
	}
	if err := r.emitFn(ev); err != nil {
		r.werr, r.stop = err, true
	}
}

// fail records a failure; without KeepGoing it stops the run.
func (r *syncRun) fail(image, step string, err error, ev types.SyncEvent) {
	f := types.SyncFailure{Image: image, Step: step, Class: ErrorClass(err), Message: err.Error()}
	ev.Status, ev.Failure = types.SyncFailed, &f
	r.mu.Lock()
	r.sum.Failed++
	r.sum.Failures = append(r.sum.Failures, f)
	if !r.opts.KeepGoing {
		r.stop = true
	}
	r.mu.Unlock()
	reg := hostOf(image)
	if strings.HasPrefix(image, "oci-archive:") {
		reg = "oci-archive"
	}
	r.m.dist.ObserveSync(reg, types.SyncFailed)
	r.emit(ev)
}

func (r *syncRun) stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stop
}

// run syncs items, maxConcurrentSyncImages at a time.
func (r *syncRun) run(ctx context.Context, items []syncItem) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxConcurrentSyncImages)
	for i, it := range items {
		if r.stopped() || gctx.Err() != nil {
			r.mu.Lock()
			r.sum.NotRun = len(items) - i
			r.mu.Unlock()
			break
		}
		g.Go(func() error {
			r.one(gctx, it)
			return nil
		})
	}
	_ = g.Wait()
}

// one syncs one image: HEAD the source, HEAD the destination, and copy
// when they differ.
func (r *syncRun) one(ctx context.Context, it syncItem) {
	ev := types.SyncEvent{Source: it.srcRef(), Destination: it.dstRef()}
	srcHost := reference.Domain(it.srcName)
	if err := r.waitRateLimit(ctx, srcHost); err != nil {
		r.fail(it.srcRef(), "resolve-source", err, ev)
		return
	}
	if !r.opts.DryRun {
		// One token for the destination: its HEAD and, when the image
		// differs, the copy's blob HEADs and uploads (20 token requests
		// fewer for a first sync of 20 images, bench case 12).
		ctx = it.dst.WithWriteScope(ctx)
	}
	// The destination first: a tag it lacks will be copied whatever the
	// source says, so the source is then read once, by the copy (its GET
	// gives the digest), instead of a HEAD and then a GET — one request
	// fewer per new image. A tag it has costs the source one HEAD.
	var have ocispec.Descriptor
	ans, err := it.dst.HeadTag(ctx, it.tag, 0)
	switch {
	case err == nil:
		have = ans.Descriptor
		ev.DestinationDigest = have.Digest.String()
	case errdefs.IsNotFound(err):
	default:
		r.fail(it.srcRef(), "resolve-destination", err, ev)
		return
	}
	if have.Digest == "" && !r.opts.DryRun && r.platform == nil {
		r.copyOne(ctx, it, ev, "")
		return
	}
	top, want, err := r.sourceDigest(ctx, it)
	if err != nil {
		r.fail(it.srcRef(), "resolve-source", err, ev)
		return
	}
	ev.Digest = want.String()
	if have.Digest == want {
		ev.Status = types.SyncSkipped
		r.mu.Lock()
		r.sum.Skipped++
		r.mu.Unlock()
		r.m.dist.ObserveSync(srcHost, types.SyncSkipped)
		r.emit(ev)
		return
	}
	if r.opts.DryRun {
		ev.Status = types.SyncPlanned
		if have.Digest != "" && r.backup != nil {
			if tag, err := r.backup.render(it, have.Digest); err == nil {
				ev.Backup = tag
			}
		}
		r.mu.Lock()
		r.sum.Planned++
		r.mu.Unlock()
		r.emit(ev)
		return
	}
	if have.Digest != "" && r.backup != nil {
		tag, err := r.keepBackup(ctx, it, have)
		if err != nil {
			r.fail(it.srcRef(), "backup", err, ev)
			return
		}
		ev.Backup = tag
		r.mu.Lock()
		r.sum.Backups++
		r.mu.Unlock()
	}
	r.copyOne(ctx, it, ev, top)
}

// copyOne copies it with CopyImage: pinned to top (the source's top-level
// digest the HEAD saw), or by tag when top is "" (nothing compared: the
// destination lacks the tag; a source that fails to resolve then fails at
// step copy).
func (r *syncRun) copyOne(ctx context.Context, it syncItem, ev types.SyncEvent, top digest.Digest) {
	var res types.CopyResult
	out := types.ProgressFunc(func(m jsonstream.Message) error {
		if m.Aux != nil {
			_ = json.Unmarshal(*m.Aux, &res)
		}
		return nil
	})
	copyOpts := types.CopyOptions{
		// Pinned to what the HEAD saw: a tag moving meanwhile does not
		// make the copy write something other than what was compared,
		// and the digest's manifest may come from the content cache.
		Source:         it.srcName.String() + "@" + top.String(),
		Destination:    it.dstRef(),
		Platform:       r.platform,
		IncludeForeign: r.opts.IncludeForeign,
		WithReferrers:  r.opts.WithReferrers,
		Auth:           r.opts.Auth,
		MetaHeaders:    r.opts.MetaHeaders,
	}
	if top == "" {
		copyOpts.Source = it.srcRef()
	}
	if err := r.m.dist.CopyImage(ctx, copyOpts, out); err != nil {
		r.fail(it.srcRef(), "copy", err, ev)
		return
	}
	if ev.Digest == "" {
		ev.Digest = res.Digest
	}
	r.synced(ev, res, reference.Domain(it.srcName))
}

// synced records an image synced with res (into a registry or an
// archive): its event, the summary's counts and the metric, by the
// registry it came from (or "oci-archive").
func (r *syncRun) synced(ev types.SyncEvent, res types.CopyResult, from string) {
	ev.Status, ev.Copy = types.SyncSynced, &res
	r.mu.Lock()
	r.sum.Synced++
	r.sum.BlobsUploaded += res.Uploaded
	r.sum.BlobsMounted += res.Mounted
	r.sum.BlobsExisted += res.Existed
	r.sum.BytesUploaded += res.BytesUploaded
	r.mu.Unlock()
	r.m.dist.ObserveSync(from, types.SyncSynced)
	r.emit(ev)
}

// sourceDigest is the source tag's top-level digest and the digest the destination should name: the source
// tag's (one HEAD), or with a platform the platform manifest's (the index
// fetched and its entry chosen as copy chooses it).
func (r *syncRun) sourceDigest(ctx context.Context, it syncItem) (top, want digest.Digest, err error) {
	ans, err := it.src.HeadTag(ctx, it.tag, 0)
	if err != nil {
		return "", "", err
	}
	top = ans.Descriptor.Digest
	if r.platform == nil || !imagespec.IsIndex(ans.Descriptor.MediaType) {
		return top, top, nil
	}
	res, err := it.src.FetchTop(ctx, top.String())
	if err != nil {
		return "", "", err
	}
	desc, _, err := res.PlatformManifest(ctx, *r.platform)
	if err != nil {
		return "", "", err
	}
	return top, desc.Digest, nil
}

// keepBackup tags what the destination tag names now under the backup
// template's tag, before the copy moves it: the manifest is read by digest
// and written back byte for byte, so the backup's digest is the old one.
func (r *syncRun) keepBackup(ctx context.Context, it syncItem, have ocispec.Descriptor) (string, error) {
	tag, err := r.backup.render(it, have.Digest)
	if err != nil {
		return "", err
	}
	b, err := it.dst.FetchManifest(ctx, have)
	if err != nil {
		return "", err
	}
	if have.MediaType == "" {
		have.MediaType = imagespec.Sniff(b)
	}
	if err := it.dst.PushManifest(ctx, have, b, tag); err != nil {
		return "", err
	}
	ev := types.SyncEvent{Status: types.SyncBackup, Source: it.srcRef(), Destination: it.dstName.String() + ":" + tag, DestinationDigest: have.Digest.String(), Backup: tag}
	r.emit(ev)
	return tag, nil
}

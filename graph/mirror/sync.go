package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry"
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
	src     *registry.Repository
	srcName reference.Named
	dst     *registry.Repository
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
	svc, err := m.dist.RegistryService()
	if err != nil {
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
	creds := registry.Credentials{Registries: opts.Auth, MetaHeaders: opts.MetaHeaders}
	r := &syncRun{m: m, svc: svc, opts: opts, platform: platform, creds: creds, backup: backup, emitFn: emit, pauses: map[string]*sync.Mutex{}}
	return r, global, nil
}

// syncRun is one sync under way.
type syncRun struct {
	m        *Mirror
	svc      *registry.Service
	opts     types.SyncOptions
	platform *ocispec.Platform
	creds    registry.Credentials
	backup   *backupTemplate

	mu     sync.Mutex // emitFn, sum, stop
	emitFn func(types.SyncEvent) error
	sum    types.SyncSummary
	stop   bool  // a failure without KeepGoing: start no more images
	werr   error // the client went away

	pmu    sync.Mutex
	pauses map[string]*sync.Mutex // per registry: one waits out a pause, the others after it
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

// plan lists every source's images, in the order of the sources. A
// source that cannot be listed is a failure at step "list" (with KeepGoing
// the others are still planned).
func (r *syncRun) plan(ctx context.Context, global tagFilter, dstHost, dstPath string) ([]syncItem, error) {
	if len(r.opts.Sources) == 0 {
		return nil, fmt.Errorf("sync needs a source%.0w", errdefs.ErrInvalidArgument)
	}
	// The sources and their filters, checked before any request.
	type source struct {
		named reference.Named
		f     tagFilter
	}
	srcs := make([]source, 0, len(r.opts.Sources))
	for _, src := range r.opts.Sources {
		named, err := reference.ParseNormalizedNamed(src.Repository)
		if err != nil {
			return nil, fmt.Errorf("source %q: %v%.0w", src.Repository, err, errdefs.ErrInvalidArgument)
		}
		if _, ok := named.(reference.Digested); ok {
			return nil, fmt.Errorf("source %q: a digest names no tag to sync%.0w", src.Repository, errdefs.ErrInvalidArgument)
		}
		f := tagFilter{regexes: global.regexes, ranges: global.ranges, latest: r.opts.Latest, noReferrerTags: r.opts.WithReferrers}
		if err := f.add(src.TagRegex, src.Semver); err != nil {
			return nil, err
		}
		if len(src.Tags) > 0 {
			f.only = map[string]bool{}
			for _, t := range src.Tags {
				f.only[t] = true
			}
		}
		if t, ok := named.(reference.Tagged); ok {
			f.only = map[string]bool{t.Tag(): true}
		}
		srcs = append(srcs, source{reference.TrimNamed(named), f})
	}
	// The listings (tag lists, catalogs) run maxConcurrentSyncImages at a
	// time across every source: 500 repositories at 25 ms RTT list in
	// ~3 s, not 12.5 s, and a registry never sees more than 4 at once.
	sem := make(chan struct{}, maxConcurrentSyncImages)
	results := make([][]syncItem, len(srcs))
	g, gctx := errgroup.WithContext(ctx)
	for i, src := range srcs {
		g.Go(func() error {
			items, err := r.planSource(gctx, src.named, src.f, dstHost, dstPath, sem)
			results[i] = items
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var items []syncItem
	for _, res := range results {
		if len(items)+len(res) > maxSyncImages {
			return nil, fmt.Errorf("the sources hold more than %d images: sync fewer at a time%.0w", maxSyncImages, errdefs.ErrInvalidArgument)
		}
		items = append(items, res...)
	}
	return items, nil
}

// bounded runs fn holding a slot of sem.
func bounded(ctx context.Context, sem chan struct{}, fn func() error) error {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-sem }()
	return fn()
}

// planSource lists one source: its tags (named tags are not listed: HEAD
// says whether each exists), or, when the registry has no repository by
// that name, every repository the catalog lists under it, each listed in
// parallel within sem. A listing that fails is a failure at step "list"
// (with KeepGoing the rest is still planned).
func (r *syncRun) planSource(ctx context.Context, named reference.Named, f tagFilter, dstHost, dstPath string, sem chan struct{}) ([]syncItem, error) {
	listFailed := func(name reference.Named, err error) error {
		if !r.opts.KeepGoing {
			return fmt.Errorf("list %s: %w", name, err)
		}
		r.fail(name.String(), "list", err, types.SyncEvent{Source: name.String()})
		return nil
	}
	repo, err := r.svc.Repository(ctx, named, r.creds)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", named, err)
	}
	type listed struct {
		repo *registry.Repository
		name reference.Named
		tags []string
	}
	var repos []listed
	if f.only != nil {
		var tags []string
		for t := range f.only {
			tags = append(tags, t)
		}
		distribution.SortTagsSemver(tags)
		repos = []listed{{repo, named, tags}}
	} else {
		var tags []string
		err := bounded(ctx, sem, func() (err error) {
			tags, err = repo.Tags(ctx, registry.TagsOptions{})
			return err
		})
		switch {
		case err == nil:
			repos = []listed{{repo, named, tags}}
		case errdefs.IsNotFound(err):
			// No repository by that name: a namespace, whose
			// repositories the catalog lists.
			var names []string
			cerr := bounded(ctx, sem, func() (err error) {
				names, err = repo.Catalog(ctx, reference.Path(named))
				return err
			})
			if cerr == nil && len(names) == 0 {
				cerr = fmt.Errorf("%s is neither a repository nor a namespace with repositories in the catalog: %w", named, err)
			}
			if cerr != nil {
				return nil, listFailed(named, cerr)
			}
			subs := make([]*listed, len(names))
			g, gctx := errgroup.WithContext(ctx)
			for i, n := range names {
				sub, err := reference.ParseNormalizedNamed(reference.Domain(named) + "/" + n)
				if err != nil {
					return nil, err
				}
				subRepo, err := r.svc.Repository(ctx, sub, r.creds)
				if err != nil {
					return nil, err
				}
				g.Go(func() error {
					var subTags []string
					err := bounded(gctx, sem, func() (err error) {
						subTags, err = subRepo.Tags(gctx, registry.TagsOptions{})
						return err
					})
					if err != nil {
						return listFailed(sub, err)
					}
					subs[i] = &listed{subRepo, sub, subTags}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				return nil, err
			}
			for _, l := range subs {
				if l != nil {
					repos = append(repos, *l)
				}
			}
		default:
			return nil, listFailed(named, err)
		}
	}
	var items []syncItem
	for _, sr := range repos {
		var dstName reference.Named
		var dst *registry.Repository
		if dstHost != "" { // "": an export, whose destination is the archive
			dstName, err = syncDestinationName(dstHost, dstPath, sr.name, r.opts.Scoped)
			if err != nil {
				return nil, err
			}
			if dst, err = r.svc.Repository(ctx, dstName, r.creds); err != nil {
				return nil, err
			}
		}
		for _, t := range f.apply(sr.tags) {
			if len(items) >= maxSyncImages {
				return nil, fmt.Errorf("the sources hold more than %d images: sync fewer at a time%.0w", maxSyncImages, errdefs.ErrInvalidArgument)
			}
			items = append(items, syncItem{src: sr.repo, srcName: sr.name, dst: dst, dstName: dstName, tag: t})
		}
	}
	return items, nil
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

// waitRateLimit pauses while host's last answer said fewer than the floor's
// requests remain, until its window has passed (one minute when it said
// no window), and says so once per pause. One image waits per host; the
// others wait behind it and then look again.
func (r *syncRun) waitRateLimit(ctx context.Context, host string) error {
	floor := r.opts.RateLimitFloor
	if floor <= 0 {
		return nil
	}
	r.pmu.Lock()
	m, ok := r.pauses[host]
	if !ok {
		m = &sync.Mutex{}
		r.pauses[host] = m
	}
	r.pmu.Unlock()
	m.Lock()
	defer m.Unlock()
	for {
		until, ok := r.pauseUntil(host, floor)
		if !ok {
			return nil
		}
		r.emit(types.SyncEvent{Status: types.SyncPaused, Registry: host, Until: until.UTC().Format(time.RFC3339)})
		t := time.NewTimer(time.Until(until))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		// The state is what the last answer said: the pause is over when
		// its window is, and the next answer says the new state. Until
		// then, go on.
		return nil
	}
}

// defaultRateLimitPause is the pause when a registry said a count but no
// window: one minute, then the next answer says again.
const defaultRateLimitPause = time.Minute

// pauseUntil says whether host is under the floor now and until when.
func (r *syncRun) pauseUntil(host string, floor int64) (time.Time, bool) {
	for _, rl := range r.svc.RateLimits() {
		if !strings.EqualFold(rl.Host, host) || rl.Limit == 0 && rl.Remaining == 0 && rl.Window == 0 {
			continue
		}
		if rl.Remaining >= floor {
			return time.Time{}, false
		}
		w := rl.Window
		if w <= 0 {
			w = defaultRateLimitPause
		}
		until := rl.Seen.Add(w)
		if !until.After(time.Now()) {
			return time.Time{}, false
		}
		return until, true
	}
	return time.Time{}, false
}

// splitSyncDestination splits host[/path]: the host must be one (a dot, a
// port, or localhost), since a path alone would be Docker Hub by default,
// the last place a mirror should land by accident.
func splitSyncDestination(s string) (host, p string, err error) {
	if strings.HasPrefix(s, "oci-archive:") {
		return "", "", fmt.Errorf("destination %q: an archive is written by the export (POST /wharf/images/sync/export)%.0w", s, errdefs.ErrInvalidArgument)
	}
	host, p, _ = strings.Cut(strings.TrimSuffix(s, "/"), "/")
	if host == "" || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return "", "", fmt.Errorf("destination %q: want a registry host[:port][/path]%.0w", s, errdefs.ErrInvalidArgument)
	}
	if p != "" {
		if _, err := reference.ParseNormalizedNamed(host + "/" + p); err != nil {
			return "", "", fmt.Errorf("destination %q: %v%.0w", s, err, errdefs.ErrInvalidArgument)
		}
	}
	return host, p, nil
}

// syncDestinationName is where src lands, as skopeo sync names it: the
// last element of its path under dst, or with scoped its host (a port's
// colon made an underscore) and whole path.
func syncDestinationName(dstHost, dstPath string, src reference.Named, scoped bool) (reference.Named, error) {
	suffix := path.Base(reference.Path(src))
	if scoped {
		// A port's colon cannot be in a path: host:5000 becomes host_5000.
		suffix = strings.ReplaceAll(reference.Domain(src), ":", "_") + "/" + reference.Path(src)
	}
	n, err := reference.ParseNormalizedNamed(path.Join(dstHost, dstPath, suffix))
	if err != nil {
		return nil, fmt.Errorf("destination for %s: %v%.0w", src, err, errdefs.ErrInvalidArgument)
	}
	return n, nil
}

// hostOf is the registry host of NAME[:TAG] as sync words images.
func hostOf(image string) string {
	if n, err := reference.ParseNormalizedNamed(image); err == nil {
		return reference.Domain(n)
	}
	h, _, _ := strings.Cut(image, "/")
	return h
}

// ErrorClass names err's class for machines (a sync failure's Class):
// from the typed errors, never the text.
func ErrorClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, registry.ErrDenied):
		return "denied"
	case errors.Is(err, registry.ErrDigestMismatch):
		return "digest-mismatch"
	case errors.Is(err, registry.ErrUpstream):
		return "upstream"
	case errdefs.IsNotFound(err):
		return "not-found"
	case errdefs.IsUnauthorized(err):
		return "unauthorized"
	case errdefs.IsPermissionDenied(err):
		return "denied"
	case errdefs.IsInvalidArgument(err):
		return "invalid-argument"
	case errdefs.IsNotImplemented(err):
		return "not-implemented"
	case errdefs.IsConflict(err), errdefs.IsAlreadyExists(err):
		return "conflict"
	case errdefs.IsUnavailable(err):
		return "unavailable"
	}
	return "unknown"
}

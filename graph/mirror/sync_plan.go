package mirror

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"golang.org/x/sync/errgroup"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/distribution"
)

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
	repo, err := r.repository(ctx, named)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", named, err)
	}
	type listed struct {
		repo *distribution.Repository
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
			tags, err = distribution.ListTags(ctx, repo)
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
				subRepo, err := r.repository(ctx, sub)
				if err != nil {
					return nil, err
				}
				g.Go(func() error {
					var subTags []string
					err := bounded(gctx, sem, func() (err error) {
						subTags, err = distribution.ListTags(gctx, subRepo)
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
		var dst *distribution.Repository
		if dstHost != "" { // "": an export, whose destination is the archive
			dstName, err = syncDestinationName(dstHost, dstPath, sr.name, r.opts.Scoped)
			if err != nil {
				return nil, err
			}
			if dst, err = r.repository(ctx, dstName); err != nil {
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

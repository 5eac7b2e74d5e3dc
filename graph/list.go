package graph

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
)

// imageListFilters are the filters GET /images/json accepts (dockerd's set).
var imageListFilters = []string{"before", "dangling", "label", "reference", "since", "until"}

// Images answers GET /images/json like dockerd: newest first; the reference
// filter (glob on familiar names) also narrows RepoTags/RepoDigests to the
// matching references; dangling=true keeps untagged images only. It is
// ImagesEach gathered into a slice.
func (s *Service) Images(ctx context.Context, opts types.ImageListOptions) ([]image.Summary, error) {
	out := []image.Summary{}
	err := s.ImagesEach(ctx, opts, func(sum image.Summary) error {
		out = append(out, sum)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// listPage is how many images the list's second pass reads per read
// transaction: a slow client never holds one open, and only a page of
// summaries is decoded at a time.
const listPage = 256

// listKey is what the list keeps of each image it returns until it emits
// it: the sort key (dockerd's order, newest first, then ID). 50,000 images
// are ~5 MB of keys, where the summaries built whole were ~110 MB.
type listKey struct {
	created int64
	id      digest.Digest
}

// ImagesEach is Images handing each image to emit as it is built, in the
// list's order, so that GET /images/json can stream them. A first pass
// over the summaries (one read transaction) keeps the sort key of every
// image the filters keep — over the candidates of the store's indexes when
// a reference=, label= or dangling=true filter is selective
// (store.ListSummaries: the cost follows the images returned, not the
// images stored), else over every summary; the keys are sorted; a second pass reads the
// summaries again, a page per read transaction, and emits. An error
// before the first emit (a bad filter, an unknown before= image) is
// returned before anything is emitted. An image changed between the
// passes is emitted as it is then if the filters still keep it (skipped if
// deleted): the list is not one snapshot, as dockerd's is not.
func (s *Service) ImagesEach(ctx context.Context, opts types.ImageListOptions, emit func(image.Summary) error) error {
	keep, err := s.listFilter(opts.Filters)
	if err != nil {
		return err
	}
	// A summary written without its meta part (the documents were
	// unreadable then) is completed from Meta after the transaction; such
	// images are rare, and kept whole until they are emitted.
	var keys []listKey
	var noMeta []*store.Summary
	if len(opts.Filters) == 0 && !s.walkList {
		// No filter keeps every image, and the first pass needs only each
		// one's sort key (summarize's Created): decoding the summaries
		// whole here was a third of an unfiltered list of 50,000.
		var noMetaIDs []digest.Digest
		err = s.images.SummaryKeys(func(id digest.Digest, created time.Time, hasMeta bool) error {
			if !hasMeta {
				noMetaIDs = append(noMetaIDs, id)
				return nil
			}
			keys = append(keys, listKey{created.Unix(), id})
			return ctx.Err()
		})
		if err == nil && len(noMetaIDs) > 0 {
			err = s.images.SummariesOf(noMetaIDs, func(_ digest.Digest, sm *store.Summary) error {
				if sm != nil && !sm.HasMeta {
					noMeta = append(noMeta, sm)
				}
				return nil
			})
		}
	} else {
		err = s.summaries(listQuery(opts.Filters), func(sm *store.Summary) error {
			if !sm.HasMeta {
				noMeta = append(noMeta, sm)
				return nil
			}
			if sum, ok := keep(sm); ok {
				keys = append(keys, listKey{sum.Created, sm.ID})
			}
			return ctx.Err()
		})
	}
	if err != nil {
		return err
	}
	completed := map[digest.Digest]*store.Summary{}
	for _, sm := range noMeta {
		if !s.completeSummary(sm) {
			continue
		}
		if sum, ok := keep(sm); ok {
			completed[sm.ID] = sm
			keys = append(keys, listKey{sum.Created, sm.ID})
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].created != keys[j].created {
			return keys[i].created > keys[j].created
		}
		return keys[i].id < keys[j].id
	})
	ids := make([]digest.Digest, 0, listPage)
	page := make([]image.Summary, 0, listPage)
	for len(keys) > 0 {
		n := min(listPage, len(keys))
		ids = ids[:0]
		for _, k := range keys[:n] {
			ids = append(ids, k.id)
		}
		keys = keys[n:]
		page = page[:0]
		err := s.images.SummariesOf(ids, func(id digest.Digest, sm *store.Summary) error {
			if sm == nil {
				return nil // deleted since the first pass
			}
			if !sm.HasMeta {
				c := completed[id]
				if c == nil || c.Manifest != sm.Manifest {
					return nil // unreadable since the first pass
				}
				sm.Created, sm.Labels, sm.Parent, sm.Size, sm.HasMeta = c.Created, c.Labels, c.Parent, c.Size, true
			}
			if sum, ok := keep(sm); ok {
				page = append(page, sum)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i := range page {
			if opts.Manifests {
				rec, err := s.images.Lookup(page[i].ID)
				if err != nil {
					continue // deleted since the summaries were read
				}
				page[i].Manifests = s.manifestSummaries(rec)
				if opts.Identity {
					// API 1.54 identity=1: each image manifest stored here
					// carries the image's Identity, as dockerd repeats it on
					// every available image manifest.
					id := types.ImageIdentity(rec.Trust, rec.RepoDigests)
					for j := range page[i].Manifests {
						if m := &page[i].Manifests[j]; m.ImageData != nil && m.Available && id != nil {
							m.ImageData.Identity = id
						}
					}
				}
			}
			if err := emit(page[i]); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// summaries is the first pass's source: the store's indexes, or the walk
// of every summary when walkList is set (tests compare the two).
func (s *Service) summaries(q store.ListQuery, fn func(*store.Summary) error) error {
	if s.walkList {
		return s.images.Summaries(fn)
	}
	return s.images.ListSummaries(q, fn)
}

// listQuery is what of the filters (validated by listFilter) an index can
// narrow; the filter function still decides every image.
func listQuery(f types.Filters) store.ListQuery {
	_, dangling, _ := boolFilter(f, "dangling")
	return store.ListQuery{References: f.Values("reference"), Labels: f.Values("label"), Untagged: dangling}
}

// completeSummary fills the meta part of a summary written without it from
// Meta; false when the documents are still unreadable (the image is left
// out of the list, with a warning, as before the summaries).
func (s *Service) completeSummary(sm *store.Summary) bool {
	meta, err := s.images.Meta(sm.Record())
	if err != nil {
		s.log.WithError(err).WithField("image", sm.ID).Warn("list: skip unreadable image")
		return false
	}
	sm.Created, sm.Labels, sm.Parent, sm.Size = meta.Config.CreatedTime(), meta.Config.Config.Labels, meta.Config.Parent, meta.Size
	sm.HasMeta = true
	return true
}

// listFilter validates the filters of GET /images/json and returns the
// test each summary (with its meta part) passes: the list entry it makes,
// and whether the filters keep it.
func (s *Service) listFilter(f types.Filters) (func(*store.Summary) (image.Summary, bool), error) {
	if err := f.Validate(imageListFilters...); err != nil {
		return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
	}
	danglingSet, danglingOnly, err := boolFilter(f, "dangling")
	if err != nil {
		return nil, err
	}
	// before/since compare with the named image's creation time even when
	// it is the zero time or the epoch (ko, crane, distroless images have
	// no real one): "set" is its own flag, never a zero value, so such a
	// filter keeps nothing older (before) and never the image itself.
	var before, since, until time.Time
	beforeSet, sinceSet := f.Has("before"), f.Has("since")
	for i, v := range f.Values("before") {
		t, err := s.createdOf(v)
		if err != nil {
			return nil, err
		}
		if i == 0 || t.Before(before) { // the oldest: the values are ANDed
			before = t
		}
	}
	for _, v := range f.Values("since") {
		t, err := s.createdOf(v)
		if err != nil {
			return nil, err
		}
		if t.After(since) { // the newest (since starts at the zero time)
			since = t
		}
	}
	for _, v := range f.Values("until") {
		if until, err = parseTimestamp(v, time.Now()); err != nil {
			return nil, err
		}
	}
	patterns := f.Values("reference")
	for _, p := range patterns {
		if _, err := filepath.Match(p, ""); err != nil {
			return nil, fmt.Errorf("invalid reference filter %q: %v%.0w", p, err, errdefs.ErrInvalidArgument)
		}
	}
	labels := f.Values("label")
	return func(sm *store.Summary) (image.Summary, bool) {
		created := sm.Created
		// An image without a creation time is neither before nor after
		// anything (dockerd skips a nil Created the same way).
		if (beforeSet || sinceSet) && created.IsZero() {
			return image.Summary{}, false
		}
		if beforeSet && !created.Before(before) {
			return image.Summary{}, false
		}
		if sinceSet && !created.After(since) {
			return image.Summary{}, false
		}
		if !until.IsZero() && !created.Before(until) {
			return image.Summary{}, false
		}
		if !matchLabels(sm.Labels, labels) {
			return image.Summary{}, false
		}
		if danglingSet && danglingOnly != (len(sm.RepoTags) == 0) {
			return image.Summary{}, false
		}
		sum := summarize(sm)
		if len(patterns) > 0 {
			sum.RepoTags = filterRefs(sum.RepoTags, patterns)
			sum.RepoDigests = filterRefs(sum.RepoDigests, patterns)
			if len(sum.RepoTags) == 0 && len(sum.RepoDigests) == 0 {
				return image.Summary{}, false
			}
		}
		return sum, true
	}, nil
}

// summarize builds the list entry of the image sm summarises. Containers is the real count of
// containers using the image, 0 on wharf (API ≥ 1.51 reports it; api/server
// turns it into -1 for older versions, as dockerd does); SharedSize is -1
// ("not computed").
func summarize(sm *store.Summary) image.Summary {
	target := sm.Target
	target.Data = nil
	return image.Summary{
		Containers:  0,
		Created:     sm.Created.Unix(),
		ID:          sm.ID.String(),
		Labels:      sm.Labels,
		ParentID:    sm.Parent,
		Descriptor:  &target,
		RepoDigests: sm.RepoDigests, // familiar already
		RepoTags:    sm.RepoTags,
		SharedSize:  -1,
		Size:        sm.Size,
	}
}

// createdOf is the config creation time of the image name (before/since).
func (s *Service) createdOf(name string) (time.Time, error) {
	rec, err := s.images.Lookup(name)
	if err != nil {
		return time.Time{}, err
	}
	meta, err := s.images.Meta(rec)
	if err != nil {
		return time.Time{}, err
	}
	return meta.Config.CreatedTime(), nil
}

// filterRefs keeps the familiar references matching one of the glob
// patterns (reference.FamiliarMatch: "busybox" matches busybox:latest).
func filterRefs(refs, patterns []string) []string {
	out := []string{}
	for _, r := range refs {
		ref, err := reference.ParseNormalizedNamed(r)
		if err != nil {
			continue
		}
		for _, p := range patterns {
			if ok, _ := reference.FamiliarMatch(p, ref); ok {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// matchLabels reports whether have satisfies every "k" or "k=v" in want.
func matchLabels(have map[string]string, want []string) bool {
	for _, w := range want {
		k, v, hasV := strings.Cut(w, "=")
		got, ok := have[k]
		if !ok || (hasV && got != v) {
			return false
		}
	}
	return true
}

// boolFilter reads a true/false filter; set reports whether it was given.
func boolFilter(f types.Filters, key string) (set, value bool, err error) {
	vals := f.Values(key)
	if len(vals) == 0 {
		return false, false, nil
	}
	for i, v := range vals {
		b, perr := strconv.ParseBool(v)
		if perr != nil || (i > 0 && b != value) {
			return false, false, fmt.Errorf("Invalid filter '%s=%s'%.0w", key, v, errdefs.ErrInvalidArgument)
		}
		value = b
	}
	return true, value, nil
}

// parseTimestamp reads an until/since value like dockerd: unix seconds
// (with optional fraction), RFC 3339 (or a date), or a duration before now.
func parseTimestamp(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "eE") {
		whole, frac, _ := strings.Cut(v, ".")
		s, _ := strconv.ParseInt(whole, 10, 64)
		var ns int64
		if frac != "" {
			frac = (frac + "000000000")[:9]
			ns, _ = strconv.ParseInt(frac, 10, 64)
		}
		return time.Unix(s, ns), nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid timestamp %q%.0w", v, errdefs.ErrInvalidArgument)
}

// DiskUsage returns the bytes of all stored blobs and the image summaries.
func (s *Service) DiskUsage(ctx context.Context) (*types.DiskUsage, error) {
	var total int64
	err := filepath.WalkDir(filepath.Join(s.images.Root(), store.BlobsDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	imgs, err := s.Images(ctx, types.ImageListOptions{All: true})
	if err != nil {
		return nil, err
	}
	// SHARED SIZE of `docker system df -v`: the bytes of an image's layers
	// that another image uses too (each stored once; LayersSize counts every
	// blob once). UNIQUE SIZE is the CLI's Size − SharedSize. Whether a
	// layer is shared is the blob → image index's answer (two keys read),
	// and each image's layers are read from its manifest one image at a
	// time: no record, and no map of every layer, is held for the store.
	shared := map[digest.Digest]bool{} // the layers asked about, at most one entry each
	for i := range imgs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		imgs[i].SharedSize = 0
		rec, err := s.images.Lookup(imgs[i].ID)
		if err != nil {
			continue // deleted since the list
		}
		layers, err := s.images.ManifestLayers(rec.Manifest.Digest)
		if err != nil {
			continue
		}
		seen := map[digest.Digest]bool{}
		for _, l := range layers {
			if seen[l.Digest] {
				continue
			}
			seen[l.Digest] = true
			sh, ok := shared[l.Digest]
			if !ok {
				sh = s.images.SharedBlob(l.Digest)
				shared[l.Digest] = sh
			}
			if sh {
				imgs[i].SharedSize += l.Size
			}
		}
	}
	partials, partialBytes := s.images.PartialUsage()
	indexes, indexBytes, _ := s.contents.Usage()
	return &types.DiskUsage{
		PartialDownloads:     partials,
		PartialDownloadsSize: partialBytes,
		LayerIndexes:         indexes,
		LayerIndexesSize:     indexBytes,
		LayersSize:           total,
		Images:               imgs,
		Containers:           []struct{}{},
		Volumes:              []struct{}{},
		BuildCache:           []struct{}{},
	}, nil
}

package graph

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
)

// ImageDelete answers DELETE /images/{name} like dockerd:
//   - by reference: untag it (and, when it was the repository's last tag,
//     the repository's digest references); delete the image when nothing
//     references it any more;
//   - by ID: an image referenced in several repositories needs force (409
//     otherwise); its references are untagged, then it is deleted.
//
// Blobs that no remaining image uses are removed unless prune is false
// (noprune=1).
func (s *Service) ImageDelete(ctx context.Context, name string, force, prune bool) ([]image.DeleteResponse, error) {
	var (
		resp []image.DeleteResponse
		evs  []store.Event
	)
	_, err := s.images.Update(prune, func(tx *store.Txn) error {
		resp, evs = nil, nil
		rec, err := tx.Lookup(name)
		if err != nil {
			return err
		}
		labels := tx.Labels(rec)
		id := rec.ID
		untag := func(ref string) {
			tx.DropRef(ref)
			resp = append(resp, image.DeleteResponse{Untagged: store.Familiar(ref)})
			evs = append(evs, store.NewEvent(id.String(), events.ActionUnTag, id.String(), labels))
		}
		byRef, refStr := deleteRef(name, id, tx.RefTarget)
		if byRef {
			untag(refStr)
			if !strings.Contains(refStr, "@") {
				repo := repoName(refStr)
				if !hasTagIn(rec, repo) {
					for _, d := range append([]string{}, rec.RepoDigests...) {
						if repoName(d) == repo {
							untag(d)
						}
					}
				}
			}
			if len(rec.RepoTags)+len(rec.RepoDigests) > 0 {
				return nil
			}
		} else {
			refs := append(append([]string{}, rec.RepoTags...), rec.RepoDigests...)
			if !force && !isSingleReference(rec) {
				return fmt.Errorf("conflict: unable to delete %s (must be forced) - image is referenced in multiple repositories%.0w",
					id.Encoded()[:12], errdefs.ErrConflict)
			}
			for _, r := range refs {
				untag(r)
			}
		}
		tx.Delete(id)
		resp = append(resp, image.DeleteResponse{Deleted: id.String()})
		evs = append(evs, store.NewEvent(id.String(), events.ActionDelete, id.String(), nil))
		return nil
	})
	if err != nil {
		return nil, err
	}
	store.Emit(ctx, s.opts.Events, evs...)
	return resp, nil
}

// deleteRef decides whether name deletes by reference (and which) or by
// ID, as dockerd's isImageIDPrefix does.
func deleteRef(name string, id digest.Digest, refTarget func(string) (digest.Digest, bool)) (bool, string) {
	if strings.HasPrefix(id.String(), name) || strings.HasPrefix(id.Encoded(), name) {
		return false, ""
	}
	n, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return false, ""
	}
	s := reference.TagNameOnly(n).String()
	if c, ok := n.(reference.Canonical); ok {
		if d, err := reference.WithDigest(reference.TrimNamed(n), c.Digest()); err == nil {
			s = d.String()
		}
	}
	if got, _ := refTarget(s); got != id {
		// name@digest matched through the target digest, not a recorded
		// reference: treat it like the ID.
		return false, ""
	}
	return true, s
}

// isSingleReference: at most one tag, and every reference in one repository.
func isSingleReference(rec *ImageRecord) bool {
	if len(rec.RepoTags) > 1 {
		return false
	}
	repo := ""
	for _, r := range append(append([]string{}, rec.RepoTags...), rec.RepoDigests...) {
		n := repoName(r)
		if repo != "" && n != repo {
			return false
		}
		repo = n
	}
	return true
}

func repoName(ref string) string {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	return n.Name()
}

func hasTagIn(rec *ImageRecord, repo string) bool {
	for _, t := range rec.RepoTags {
		if repoName(t) == repo {
			return true
		}
	}
	return false
}

// imagePruneFilters are the filters POST /images/prune accepts.
var imagePruneFilters = []string{"dangling", "label", "label!", "until"}

// ImagesPrune answers POST /images/prune: untagged images by default
// (dangling=false: every image, since wharf has no containers), narrowed by
// until and label / label!.
func (s *Service) ImagesPrune(ctx context.Context, filters types.Filters) (*image.PruneReport, error) {
	if err := filters.Validate(imagePruneFilters...); err != nil {
		return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
	}
	set, dangling, err := boolFilter(filters, "dangling")
	if err != nil {
		return nil, err
	}
	if !set {
		dangling = true
	}
	var until time.Time
	for _, v := range filters.Values("until") {
		if until, err = parseTimestamp(v, time.Now()); err != nil {
			return nil, err
		}
	}
	labels, notLabels := filters.Values("label"), filters.Values("label!")

	report := &image.PruneReport{}
	var evs []store.Event
	freed, err := s.images.Update(true, func(tx *store.Txn) error {
		report.ImagesDeleted, evs = nil, nil
		for _, rec := range tx.Images() {
			if dangling && len(rec.RepoTags) > 0 {
				continue
			}
			meta, err := s.images.Meta(rec)
			if err != nil {
				continue
			}
			if !until.IsZero() && !meta.Config.CreatedTime().Before(until) {
				continue
			}
			if !matchLabels(meta.Config.Config.Labels, labels) {
				continue
			}
			if len(notLabels) > 0 && anyLabel(meta.Config.Config.Labels, notLabels) {
				continue
			}
			for _, r := range append(append([]string{}, rec.RepoTags...), rec.RepoDigests...) {
				report.ImagesDeleted = append(report.ImagesDeleted, image.DeleteResponse{Untagged: store.Familiar(r)})
				evs = append(evs, store.NewEvent(rec.ID.String(), events.ActionUnTag, rec.ID.String(), nil))
			}
			tx.Delete(rec.ID)
			report.ImagesDeleted = append(report.ImagesDeleted, image.DeleteResponse{Deleted: rec.ID.String()})
			evs = append(evs, store.NewEvent(rec.ID.String(), events.ActionDelete, rec.ID.String(), nil))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Prune also reclaims orphans: blobs that no image and no operation in
	// progress uses (left by a crash, or by a version before leases).
	_, orphanBytes, err := s.images.CollectAll(ctx)
	if err != nil {
		return nil, err
	}
	report.SpaceReclaimed = uint64(freed + orphanBytes)
	evs = append(evs, store.Event{Action: events.ActionPrune, Attrs: map[string]string{"reclaimed": strconv.FormatUint(report.SpaceReclaimed, 10)}})
	store.Emit(ctx, s.opts.Events, evs...)
	return report, nil
}

// anyLabel reports whether have matches one of the "k" / "k=v" in want.
func anyLabel(have map[string]string, want []string) bool {
	for _, w := range want {
		if matchLabels(have, []string{w}) {
			return true
		}
	}
	return false
}

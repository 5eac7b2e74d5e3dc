package updates

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

// The summaries of the watch's events: an outdated or newer-version event
// carries what changed, built by one diff when the event is logged — that
// is, only for a tag whose state changed, never on a quiet round.
//
// Attributes (docker's events carry strings only), so that a consumer
// reading /events (diun and the like) needs nothing else:
//
//	wharf.diff        the DiffSummary as compact JSON (at most 16 KiB)
//	diff.to           the image compared with (repository:tag)
//	packages.changed  "curl 8.5.0-1→8.6.0-1, +jq@1.7, -wget@1.21" (at most 4 KiB)
//	packages.count    how many packages changed, added or removed
//	pull.bytes        the bytes a pull downloads; pull.layers the layers
//	files.changed     the paths changed in the layers that differ
//	compare.url       the source's compare link, when there is one
//	signer.same       "true" or "false", when the signer section could tell
//	diff.error        why the summary is missing or partial

const (
	// watchMaxDiffs caps the summaries of one round (16), built one at a
	// time: the first round with nothing kept reports every alarm at
	// once, and each diff reads the layers that differ; the events past
	// the cap carry diff.error instead. A later round's changes are few.
	watchMaxDiffs = 16
	// maxDiffAttr caps wharf.diff (16 KiB): the event stream sends every
	// attribute to every subscriber; past it the package lists are halved
	// until it fits (Truncated), the counts kept whole.
	maxDiffAttr = 16 << 10
	// maxPackagesAttr caps packages.changed (4 KiB, about 60 packages): a
	// notification's text; the list is cut at a package, "…" added.
	maxPackagesAttr = 4 << 10
)

// summaryKey is one event's summary: the tag and the action.
type summaryKey struct {
	name   string
	action events.Action
}

// summaries builds the summaries of the outdated and newer-version events
// the round's results are worth, one diff at a time, at most
// watchMaxDiffs; nil without a differ.
func (w *Watcher) summaries(ctx context.Context, results []types.RemoteCheckResult, auth map[string]registry.AuthConfig) map[summaryKey]*types.DiffSummary {
	w.mu.Lock()
	d := w.differ
	type job struct {
		key summaryKey
		r   types.RemoteCheckResult
		to  string
	}
	var jobs []job
	if d != nil {
		for _, r := range results {
			name := r.Repository + ":" + r.Tag
			_, acts := nextState(w.state[name], r)
			for _, a := range acts {
				to := ""
				switch a.action {
				case ActionOutdated:
					to = name
				case ActionNewerVersion:
					if vs := r.NewerVersions(); len(vs) > 0 {
						to = r.Repository + ":" + vs[0]
					}
				}
				if to != "" {
					jobs = append(jobs, job{summaryKey{name, a.action}, r, to})
				}
			}
		}
	}
	w.mu.Unlock()
	if len(jobs) == 0 {
		return nil
	}
	out := make(map[summaryKey]*types.DiffSummary, len(jobs))
	for i, j := range jobs {
		if ctx.Err() != nil {
			return out
		}
		if i >= watchMaxDiffs {
			out[j.key] = &types.DiffSummary{To: j.to, Error: "not built: the round's first " + strconv.Itoa(watchMaxDiffs) + " changes have theirs"}
			continue
		}
		out[j.key] = summarize(ctx, d, j.r, j.to, auth, nil)
	}
	return out
}

// summaryAttrs adds a summary's attributes to an event's (nothing for nil).
func summaryAttrs(a map[string]string, s *types.DiffSummary) {
	if s == nil {
		return
	}
	set := func(k, v string) {
		if v != "" {
			a[k] = v
		}
	}
	set("wharf.diff", diffAttr(*s))
	set("diff.to", s.To)
	set("diff.error", s.Error)
	set("packages.changed", packagesAttr(s))
	set("packages.count", strconv.Itoa(max(s.PackageChanges, len(s.PackagesChanged)+len(s.PackagesAdded)+len(s.PackagesRemoved))))
	set("pull.bytes", strconv.FormatInt(s.PullBytes, 10))
	set("pull.layers", strconv.Itoa(s.PullLayers))
	set("files.changed", strconv.Itoa(s.FilesChanged))
	set("compare.url", s.CompareURL)
	if s.SameSigner != nil {
		set("signer.same", strconv.FormatBool(*s.SameSigner))
	}
}

// diffAttr is the summary as compact JSON, its package lists halved until
// it fits in maxDiffAttr.
func diffAttr(s types.DiffSummary) string {
	if s.PackageChanges == 0 {
		s.PackageChanges = len(s.PackagesChanged) + len(s.PackagesAdded) + len(s.PackagesRemoved)
	}
	for {
		b, err := json.Marshal(s)
		if err != nil {
			return ""
		}
		if len(b) <= maxDiffAttr {
			return string(b)
		}
		if len(s.PackagesChanged)+len(s.PackagesAdded)+len(s.PackagesRemoved) == 0 {
			// Only the strings are left: the error and the link, each
			// the diff's own; drop them rather than send a cut JSON.
			s.Error, s.CompareURL = "summary too large for an event", ""
			b, _ = json.Marshal(s)
			return string(b)
		}
		s.PackagesChanged = s.PackagesChanged[:len(s.PackagesChanged)/2]
		s.PackagesAdded = s.PackagesAdded[:len(s.PackagesAdded)/2]
		s.PackagesRemoved = s.PackagesRemoved[:len(s.PackagesRemoved)/2]
		s.Truncated = true
	}
}

// packagesAttr is packages.changed: "name from→to" for each changed
// package, "+name@version" added, "-name@version" removed, cut at a
// package to fit maxPackagesAttr.
func packagesAttr(s *types.DiffSummary) string {
	parts := s.PackageLines()
	var b strings.Builder
	for i, p := range parts {
		sep := ""
		if i > 0 {
			sep = ", "
		}
		if b.Len()+len(sep)+len(p) > maxPackagesAttr-len(", …") {
			b.WriteString(sep + "…")
			break
		}
		b.WriteString(sep + p)
	}
	return b.String()
}

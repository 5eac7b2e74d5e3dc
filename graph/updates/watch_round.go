package updates

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

// A round of the watch: the check, and the state machine that turns its
// results into events (only changes are reported).

// tagState is what the watch last knew of one local tag. The zero value is
// "nothing known" (and is what watch-state.json leaves out): the first
// round with nothing kept reports what is wrong (outdated, a
// newer version, a moved base) and is silent about what is fine.
type tagState struct {
	registry     string
	outdated     bool   // the tag names another digest now, for this platform
	remoteDigest string // the digest it named when outdated
	newer        string // the newer versions, "patch,minor,major" ("" none)
	baseOutdated bool
	baseCurrent  string // the base's current digest when outdated
}

// Round runs one check and reports what changed.
func (w *Watcher) Round(ctx context.Context, iv time.Duration) {
	w.LoadState()
	skipped := w.backedOff()
	af := w.Auth()
	var (
		ra    RoundAuth
		herrs []error
	)
	if af != nil {
		ra, herrs = af.Credentials(ctx)
	}
	for _, e := range herrs {
		// Names the helper and the host, never what it printed.
		w.log.WithError(e).Warn("check-remote round: a credential helper failed; its registry is skipped this round (its tags keep their state)")
	}
	// A registry whose helper failed is skipped as a backed-off one is
	// (its tags keep their state), not asked anonymously: an anonymous
	// answer from a registry that would have been asked with credentials
	// is not the answer the operator configured. skip is called by the
	// check before it asks anything, from one goroutine.
	skip := func(reg string) bool {
		if !skipped[reg] && ra.Skips != nil && ra.Skips(reg) {
			skipped[reg] = true
		}
		return skipped[reg]
	}
	auths := ra.Sets
	opts := types.RemoteCheckOptions{MaxAge: iv / 2, Newer: true, Base: true, Auth: auths}
	var results []types.RemoteCheckResult
	err := w.check.CheckRemoteSkipping(ctx, opts, skip, func(r types.RemoteCheckResult) error {
		results = append(results, r)
		return nil
	})
	if ctx.Err() != nil {
		return // shutting down: a partial round reports nothing
	}
	if err != nil {
		w.log.WithError(err).Warn("check-remote round failed")
		return
	}
	sums := w.summaries(ctx, results, auths)
	if ctx.Err() != nil {
		return
	}
	n := w.apply(results, skipped, sums)
	w.saveState()
	if msg := unreadable(results, ra.Has, af != nil); msg != "" {
		w.log.Warn(msg)
	}
	w.log.WithFields(logrus.Fields{"tags": len(results), "events": n, "skipped-registries": len(skipped)}).Debug("check-remote round")
}

// unreadable is the round's one line about the tags it could not check
// ("" none): per registry how many, and whether the watch presented
// credentials there — a private repository without them is the usual
// cause, and the line says how to give them. One line per round, however
// many tags: a registry of 500 private tags must not write 500 lines every
// interval. Registry error texts are not classified (they are the
// registry's words); one is shown per registry, for the cause.
func unreadable(results []types.RemoteCheckResult, has func(registry string) bool, haveFile bool) string {
	type regErrs struct {
		n     int
		first string
	}
	by := map[string]*regErrs{}
	for _, r := range results {
		if r.RemoteStatus != types.RemoteError {
			continue
		}
		reg := registryOf(r.Repository)
		e := by[reg]
		if e == nil {
			e = &regErrs{first: r.RemoteError}
			by[reg] = e
		}
		e.n++
	}
	if len(by) == 0 {
		return ""
	}
	regs := make([]string, 0, len(by))
	for reg := range by {
		regs = append(regs, reg)
	}
	sort.Strings(regs)
	parts := make([]string, 0, len(regs))
	for _, reg := range regs {
		e := by[reg]
		how := "anonymously (no check-remote-auth-file)"
		switch {
		case has != nil && has(reg):
			how = "with the credentials of check-remote-auth-file"
		case haveFile:
			how = "anonymously (check-remote-auth-file has no credentials for it)"
		}
		parts = append(parts, fmt.Sprintf("%s: %d tags, asked %s (first error: %s)", reg, e.n, how, e.first))
	}
	return "check-remote round: tags that could not be checked keep their state; " + strings.Join(parts, "; ")
}

// backedOff are the registries (reference domains) to skip this round:
// those whose host is backed off now, until the later of the gate's
// opening and the time the registry said its limit resets (the gate's wait
// is capped at 10 s, registry/transport; asking before the reset would
// only earn another 429). Docker Hub's API host is registry-1.docker.io; a
// mirror's back-off does not skip its upstream (the check falls back to
// it).
func (w *Watcher) backedOff() map[string]bool {
	out := map[string]bool{}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.backoffs != nil {
		for _, b := range w.backoffs() {
			h := strings.ToLower(b.Host)
			if h == "registry-1.docker.io" || h == "registry-1.docker.io:443" {
				h = "docker.io"
			}
			until := b.Until
			if b.Resets.After(until) {
				until = b.Resets
			}
			if until.After(w.skipUntil[h]) {
				w.skipUntil[h] = until
			}
		}
	}
	for h, until := range w.skipUntil {
		if now.Before(until) {
			out[h] = true
		} else {
			delete(w.skipUntil, h)
		}
	}
	return out
}

// apply merges a round's results into the state, logs an event for each
// change, and returns how many it logged. Tags of registries not skipped
// that the round did not report are gone from the store: forgotten.
func (w *Watcher) apply(results []types.RemoteCheckResult, skipped map[string]bool, sums map[summaryKey]*types.DiffSummary) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	w.rounds++
	seen := make(map[string]bool, len(results))
	type ev struct {
		action events.Action
		actor  string
		attrs  map[string]string
	}
	var evs []ev
	for _, r := range results {
		name := r.Repository + ":" + r.Tag
		seen[name] = true
		prev, ok := w.state[name]
		if !ok {
			prev.registry = registryOf(r.Repository)
		}
		next, acts := nextState(prev, r)
		w.state[name] = next
		if answered(r) {
			w.lastOK[next.registry] = now
		}
		for _, a := range acts {
			attrs := eventAttrs(name, r, a.cleared)
			summaryAttrs(attrs, sums[summaryKey{name, a.action}])
			evs = append(evs, ev{a.action, name, attrs})
		}
	}
	for name, st := range w.state {
		if !seen[name] && !skipped[st.registry] {
			delete(w.state, name)
		}
	}
	// Logged under mu so that two rounds' events never interleave (rounds
	// do not overlap anyway); Events.Log never blocks (a slow subscriber
	// loses events, the daemon does not wait).
	for _, e := range evs {
		w.events.Log(events.ImageEventType, e.action, e.actor, e.attrs)
	}
	return len(evs)
}

// answered: the registry answered about the tag (current, outdated, or
// the tag is gone from it).
func answered(r types.RemoteCheckResult) bool {
	switch r.RemoteStatus {
	case types.RemoteCurrent, types.RemoteOutdated, types.RemoteMissing:
		return true
	}
	return false
}

// action is one event to log: its action, and for "current" which alarm
// was cleared.
type action struct {
	action  events.Action
	cleared events.Action
}

// nextState is the state after result r, and the events the change is
// worth. An aspect the round could not tell (an error, a missing tag, a
// base that could not be asked) keeps its state: only answers change it.
func nextState(prev tagState, r types.RemoteCheckResult) (tagState, []action) {
	next := prev
	var acts []action
	status := r.RemoteStatus
	if status == types.RemoteOutdated && r.PlatformChanged != nil && !*r.PlatformChanged {
		// Only other platforms of the index changed: a re-pull gives the
		// same image, which is no alarm (diun#299, the top complaint of
		// the watchers this replaces). `images --check-remote` still says
		// "outdated (platform unchanged)".
		status = types.RemoteCurrent
	}
	switch status {
	case types.RemoteOutdated:
		next.outdated, next.remoteDigest = true, r.RemoteDigest
		if !prev.outdated || prev.remoteDigest != r.RemoteDigest {
			acts = append(acts, action{action: ActionOutdated})
		}
	case types.RemoteCurrent:
		next.outdated, next.remoteDigest = false, ""
		if prev.outdated {
			acts = append(acts, action{action: ActionCurrent, cleared: ActionOutdated})
		}
	}
	if r.NewerError == "" && r.VersionTag != nil && answered(r) {
		next.newer = strings.Join([]string{r.NewerPatch, r.NewerMinor, r.NewerMajor}, ",")
		if next.newer == ",," {
			next.newer = ""
		}
		switch {
		case next.newer != "" && next.newer != prev.newer:
			acts = append(acts, action{action: ActionNewerVersion})
		case next.newer == "" && prev.newer != "":
			acts = append(acts, action{action: ActionCurrent, cleared: ActionNewerVersion})
		}
	}
	switch r.BaseStatus {
	case types.BaseOutdated:
		next.baseOutdated, next.baseCurrent = true, r.BaseCurrentDigest
		if !prev.baseOutdated || prev.baseCurrent != r.BaseCurrentDigest {
			acts = append(acts, action{action: ActionBaseOutdated})
		}
	case types.BaseCurrent:
		next.baseOutdated, next.baseCurrent = false, ""
		if prev.baseOutdated {
			acts = append(acts, action{action: ActionCurrent, cleared: ActionBaseOutdated})
		}
	}
	return next, acts
}

// eventAttrs are an event's attributes: the tag ("name", as dockerd's
// image events), the image, the digests and tags of the answer (empty
// ones left out), and for "current" the alarm it clears ("cleared").
func eventAttrs(name string, r types.RemoteCheckResult, cleared events.Action) map[string]string {
	a := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			a[k] = v
		}
	}
	set("name", name)
	set("imageID", r.ID)
	set("registry", registryOf(r.Repository))
	set("remoteStatus", r.RemoteStatus)
	set("localDigest", r.LocalDigest)
	set("remoteDigest", r.RemoteDigest)
	set("platform", r.Platform)
	set("localPlatformDigest", r.LocalPlatformDigest)
	set("remotePlatformDigest", r.RemotePlatformDigest)
	if r.PlatformChanged != nil {
		set("platformChanged", strconv.FormatBool(*r.PlatformChanged))
	}
	set("newerPatch", r.NewerPatch)
	set("newerMinor", r.NewerMinor)
	set("newerMajor", r.NewerMajor)
	set("baseStatus", r.BaseStatus)
	set("baseName", r.BaseName)
	set("baseDigest", r.BaseDigest)
	set("baseCurrentDigest", r.BaseCurrentDigest)
	set("baseCurrentPlatformDigest", r.BaseCurrentPlatformDigest)
	set("basePlatform", r.BasePlatform)
	set("cleared", string(cleared))
	return a
}

// registryOf is the registry of a familiar repository name ("docker.io"
// for "busybox").
func registryOf(repo string) string {
	n, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return ""
	}
	return reference.Domain(n)
}

package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/events"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/daemon/metrics"
	"github.com/wharfproject/wharf/registry"
)

// The watch (issue 24, "a daemon that watches"): with check-remote-interval
// set, the daemon runs the update check of `wharf images --check-remote
// --newer --base` for every local tag, round after round, and reports each
// CHANGE of a tag's state as an image event on /events (actions outdated,
// newer-version, base-outdated and current) and in the gauges of
// daemon/metrics/checkremote.go. It only reads: nothing is pulled, tagged
// or removed.
//
// Timing: the first round starts after a random delay of up to a tenth of
// the interval (at most 30 s), and each next one an interval ± 10 %
// (uniform) after the previous one ENDED, so that rounds never overlap
// and a fleet of daemons started together (a rollout, a power cut) spreads
// its requests over the interval instead of asking a registry in lockstep
// — the spread keeps drifting apart round after round. 10 % is enough to
// desynchronise and little enough that "every 6h" still means it.
//
// Cost and manners: a round is the check itself (graph.Service.CheckRemote:
// at most 8 requests in flight, a share per registry, the per-host gate
// of registry/transport behind it, a registry that fails asked nothing
// more in the round), with the freshness caches allowed answers younger
// than half the interval (a `wharf images --check-remote` just run makes
// the round free). A registry host backed off now by a 429 or 503 with
// Retry-After (registry.Service.Backoffs) is skipped for the round: its
// tags keep their state and no request queues behind its gate.
//
// Credentials: API requests bring their own (the CLI sends them with each
// request); the watch has no client, so it presents those of
// check-remote-auth-file (authfile.go), asked afresh each round from the
// file as last read and its credential helpers, each set only for the
// registry it is listed for. Without the file, or for a registry it does
// not list, the watch asks anonymously; a tag whose registry refuses the
// read keeps its state (an error changes nothing), and the round says so
// in one log line for all such tags (unreadable), not one per tag.
//
// Restarts (watchstate.go): what the watch reported is kept in
// <data-root>/watch-state.json — the state of every tag with an alarm,
// written (atomically, 0600) after a round that changed it and read when
// the watch first runs — so that the first round after an upgrade or a
// reboot reports only what changed while the daemon was down (one event
// per such tag), not every alarm again: a consumer that notifies on
// events, as Diun does, is not notified twice. The gauges count the kept
// alarms from start-up. The state is kept however old it is and whatever
// platform it was saved on (each tag is checked for its image's own
// platform); a file that cannot be used is a warning and the watch starts
// from nothing, as before the file existed.

// watchMinInterval is the shortest check-remote-interval accepted (1 s,
// for tests: the integration tests and the bench watch at 1 s); under
// watchShortInterval the daemon warns (log and /info): each round asks
// every registry about every tag, and Diun's default is 6 hours.
const (
	watchMinInterval   = time.Second
	watchShortInterval = time.Minute
	// watchFirstMax caps the random delay before the first round.
	watchFirstMax = 30 * time.Second
	// watchJitter is the ± spread of each interval (10 %).
	watchJitter = 0.1
)

// Actions of the watch's image events.
const (
	ActionOutdated     events.Action = "outdated"
	ActionNewerVersion events.Action = "newer-version"
	ActionBaseOutdated events.Action = "base-outdated"
	ActionCurrent      events.Action = "current"
)

// watchChecker is what the watch needs of the image store.
type watchChecker interface {
	CheckRemoteSkipping(ctx context.Context, opts types.RemoteCheckOptions, skip func(registry string) bool, emit func(types.RemoteCheckResult) error) error
}

// eventLog is where the watch's events go (*Events).
type eventLog interface {
	Log(typ events.Type, action events.Action, actorID string, attrs map[string]string)
}

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

// watcher runs the rounds; its state is under mu.
type watcher struct {
	check    watchChecker
	events   eventLog
	backoffs func() []registry.HostBackoff
	log      *logrus.Entry
	now      func() time.Time

	reset chan struct{} // 1-buffered: the interval changed
	mu    sync.Mutex
	// interval is the one in force (0: off).
	interval time.Duration
	// auth is the auth file in force (nil: anonymous).
	auth   *authFile
	state  map[string]tagState // by familiar repository:tag
	lastOK map[string]time.Time
	// skipUntil: registries backed off, skipped until then (backedOff).
	skipUntil map[string]time.Time
	rounds    int64
	rnd       *rand.Rand

	// statePath is the file the state is kept in across restarts
	// (watchstate.go; "": not kept, as in unit tests), platform the
	// daemon's, recorded in it. loaded: the file was read (once, when the
	// watch first runs). saved is what the file holds now, to tell whether
	// a round changed it; nil: unknown (unreadable), rewritten by the next
	// round.
	statePath, platform string
	loaded              bool
	saved               map[string]tagState
}

func newWatcher(check watchChecker, ev eventLog, backoffs func() []registry.HostBackoff, interval time.Duration, log *logrus.Entry) *watcher {
	return &watcher{
		check: check, events: ev, backoffs: backoffs, log: log, now: time.Now,
		reset:     make(chan struct{}, 1),
		interval:  interval,
		state:     map[string]tagState{},
		lastOK:    map[string]time.Time{},
		skipUntil: map[string]time.Time{},
		rnd:       rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
}

// keepStateIn keeps the state in path across restarts (watchstate.go);
// platform is the daemon's. Called before the watch runs.
func (w *watcher) keepStateIn(path, platform string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.statePath, w.platform = path, platform
}

// loadState reads the kept state, the first time it is called: when the
// watch starts with an interval, else at its first round (a SIGHUP turned
// it on). A file that cannot be used is a warning: the watch starts from
// nothing, and its first round rewrites the file.
func (w *watcher) loadState() {
	w.mu.Lock()
	if w.statePath == "" || w.loaded {
		w.mu.Unlock()
		return
	}
	w.loaded = true
	path, platform := w.statePath, w.platform
	w.mu.Unlock()
	st, info, err := loadWatchState(path)
	if err != nil {
		w.log.WithError(err).WithField("file", path).Warn("ignoring the watch's saved state: the watch starts from nothing, and its first round reports every alarm again")
		return
	}
	w.mu.Lock()
	for name, s := range st {
		if _, ok := w.state[name]; !ok {
			w.state[name] = s
		}
	}
	w.saved = st
	if w.saved == nil {
		w.saved = map[string]tagState{}
	}
	w.mu.Unlock()
	if st == nil {
		return // no file yet
	}
	fields := logrus.Fields{"file": path, "tags": len(st), "saved": info.Saved.Format(time.RFC3339)}
	if info.Platform != "" && info.Platform != platform {
		// Kept all the same: each tag is checked for the platform its
		// image was pulled for (watchstate.go).
		fields["saved-on-platform"] = info.Platform
	}
	w.log.WithFields(fields).Info("watch state loaded: tags whose alarm is unchanged are not reported again")
}

// saveState writes the kept state when the round changed it (one writer:
// rounds do not overlap). A failed write is a warning; the next round
// tries again.
func (w *watcher) saveState() {
	w.mu.Lock()
	if w.statePath == "" || (w.saved != nil && sameKept(w.state, w.saved)) {
		w.mu.Unlock()
		return
	}
	snap := kept(w.state)
	path, platform := w.statePath, w.platform
	w.mu.Unlock()
	err := saveWatchState(path, snap, w.now(), platform)
	if errors.Is(err, errWatchStateTooBig) {
		// It could not be read back: no file rather than a stale one
		// (a restart then reports every alarm again).
		w.log.WithError(err).Warn("the watch's state is not kept across restarts")
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			w.log.WithError(rerr).Warn("removing the watch's saved state")
		}
	} else if err != nil {
		w.log.WithError(err).WithField("file", path).Warn("saving the watch's state failed; the next round tries again")
		return
	}
	w.mu.Lock()
	w.saved = snap
	w.mu.Unlock()
}

// Interval is the interval in force.
func (w *watcher) Interval() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.interval
}

// SetInterval changes the interval (a reload): the wait in progress is
// dropped and the next round starts as a first one does (a random delay of
// up to a tenth of the new interval, at most 30 s). 0 stops the rounds; the
// state and the gauges stay as last seen.
func (w *watcher) SetInterval(d time.Duration) {
	w.mu.Lock()
	w.interval = d
	w.mu.Unlock()
	select {
	case w.reset <- struct{}{}:
	default:
	}
}

// Auth is the auth file in force (nil: none).
func (w *watcher) Auth() *authFile {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.auth
}

// SetAuth replaces the auth file (a reload); the next round uses it, the
// round in progress keeps the one it started with.
func (w *watcher) SetAuth(f *authFile) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.auth = f
}

// delay is the wait before the next round.
func (w *watcher) delay(iv time.Duration, first bool) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if first {
		return time.Duration(w.rnd.Float64() * float64(min(iv/10, watchFirstMax)))
	}
	return time.Duration(float64(iv) * (1 - watchJitter + 2*watchJitter*w.rnd.Float64()))
}

// run runs rounds until ctx ends; it returns once the round in progress
// (canceled by ctx) has returned.
func (w *watcher) run(ctx context.Context) {
	first := true
	for {
		iv := w.Interval()
		var (
			timer *time.Timer
			fire  <-chan time.Time
		)
		if iv > 0 {
			timer = time.NewTimer(w.delay(iv, first))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-w.reset:
			if timer != nil {
				timer.Stop()
			}
			first = true
			continue
		case <-fire:
		}
		first = false
		w.round(ctx, iv)
	}
}

// round runs one check and reports what changed.
func (w *watcher) round(ctx context.Context, iv time.Duration) {
	w.loadState()
	skipped := w.backedOff()
	af := w.Auth()
	ra, herrs := af.credentials(ctx)
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
		if !skipped[reg] && ra.skips(reg) {
			skipped[reg] = true
		}
		return skipped[reg]
	}
	auths := ra.sets
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
	n := w.apply(results, skipped)
	w.saveState()
	if msg := unreadable(results, auths, af != nil); msg != "" {
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
func unreadable(results []types.RemoteCheckResult, auths map[string]registrytypes.AuthConfig, haveFile bool) string {
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
		case (registry.Credentials{Registries: auths}).For(reg) != nil:
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
func (w *watcher) backedOff() map[string]bool {
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
func (w *watcher) apply(results []types.RemoteCheckResult, skipped map[string]bool) int {
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
			evs = append(evs, ev{a.action, name, eventAttrs(name, r, a.cleared)})
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

// sample is the watch's state for the metrics.
func (w *watcher) sample() metrics.CheckRemoteSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	by := map[string]*metrics.CheckRemoteRegistry{}
	entry := func(reg string) *metrics.CheckRemoteRegistry {
		e := by[reg]
		if e == nil {
			e = &metrics.CheckRemoteRegistry{Registry: reg}
			by[reg] = e
		}
		return e
	}
	s := metrics.CheckRemoteSample{Rounds: w.rounds, Interval: w.interval.Seconds()}
	for _, st := range w.state {
		e := entry(st.registry)
		if st.outdated {
			e.Outdated++
		}
		if st.newer != "" {
			e.Newer++
		}
		if st.baseOutdated {
			s.BaseOutdated++
		}
	}
	for reg, t := range w.lastOK {
		entry(reg).LastSuccess = float64(t.UnixNano()) / 1e9
	}
	for _, e := range by {
		s.Registries = append(s.Registries, *e)
	}
	sort.Slice(s.Registries, func(i, j int) bool { return s.Registries[i].Registry < s.Registries[j].Registry })
	return s
}

// startWatch runs the watch until ctx ends or stop is called; stop returns
// once its goroutine has (a round in progress is canceled), and may be
// called more than once.
func (d *Daemon) startWatch(ctx context.Context, log *logrus.Entry) (stop func()) {
	if d.watch == nil {
		return func() {}
	}
	if iv := d.watch.Interval(); iv > 0 {
		log.WithField("check-remote-interval", iv).Info("watching local tags for updates")
		// Now rather than at the first round (up to 30 s away): the
		// gauges count the kept alarms from start-up.
		d.watch.loadState()
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.watch.run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

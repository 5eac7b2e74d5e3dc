package updates

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/moby/moby/api/types/events"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

// The watch: with check-remote-interval set, the daemon runs the update
// check of `wharf images --check-remote --newer --base` for every local
// tag, round after round, and reports each CHANGE of a tag's state as an
// image event on /events (actions outdated, newer-version, base-outdated
// and current) and in the daemon's check-remote gauges (Sample). It only
// reads: nothing is pulled, tagged or removed.
//
// Timing: the first round starts after a random delay of up to a tenth of
// the interval (at most 30 s), and each next one an interval ± 10 %
// (uniform) after the previous one ENDED, so that rounds never overlap
// and a fleet of daemons started together (a rollout, a power cut) spreads
// its requests over the interval instead of asking a registry in lockstep
// — the spread keeps drifting apart round after round. 10 % is enough to
// desynchronise and little enough that "every 6h" still means it.
//
// Cost and manners: a round is the check itself (Checker.CheckRemote:
// at most 8 requests in flight, a share per registry, the per-host gate
// of registry/transport behind it, a registry that fails asked nothing
// more in the round), with the freshness caches allowed answers younger
// than half the interval (a `wharf images --check-remote` just run makes
// the round free). A registry host backed off now by a 429 or 503 with
// Retry-After (HostBackoff: the daemon hands in registry.Service.Backoffs)
// is skipped for the round: its tags keep their state and no request
// queues behind its gate.
//
// Credentials: API requests bring their own (the CLI sends them with each
// request); the watch has no client, so it presents those of
// check-remote-auth-file (the daemon's Auth), asked afresh each round from
// the file as last read and its credential helpers, each set only for the
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

const (
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

// Check is the update check the watch runs (Checker.CheckRemoteSkipping).
type Check interface {
	CheckRemoteSkipping(ctx context.Context, opts types.RemoteCheckOptions, skip func(registry string) bool, emit func(types.RemoteCheckResult) error) error
}

// EventLog is where the watch's image events go (the daemon's event log).
type EventLog interface {
	Log(typ events.Type, action events.Action, actorID string, attrs map[string]string)
}

// Auth is the credentials a round presents (the daemon's
// check-remote-auth-file); a nil Auth asks anonymously.
type Auth interface {
	Credentials(ctx context.Context) (RoundAuth, []error)
}

// RoundAuth is what one round presents: the credential sets by registry
// key, which registries to skip (their credential helper failed), and
// whether a set is presented to a registry (matched as the check matches
// the keys).
type RoundAuth struct {
	Sets  map[string]registrytypes.AuthConfig
	Skips func(registry string) bool // nil: none
	Has   func(registry string) bool // nil: none
}

// HostBackoff is a registry host backed off now by a 429 or 503: until
// its gate opens (Until) and, later, when the registry said its limit
// resets (Resets).
type HostBackoff struct {
	Host          string
	Until, Resets time.Time
}

// Watcher runs the rounds; its state is under mu.
type Watcher struct {
	check    Check
	events   EventLog
	backoffs func() []HostBackoff
	log      *logrus.Entry
	now      func() time.Time

	reset chan struct{} // 1-buffered: the interval changed
	mu    sync.Mutex
	// interval is the one in force (0: off).
	interval time.Duration
	// auth is the auth file in force (nil: anonymous).
	auth   Auth
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

	// differ builds the summaries of the outdated and newer-version
	// events (nil: the events carry none).
	differ Differ
}

// DiffWith sets what builds the summaries the outdated and newer-version
// events carry (graph.Service); called before the watch runs.
func (w *Watcher) DiffWith(d Differ) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.differ = d
}

func NewWatcher(check Check, ev EventLog, backoffs func() []HostBackoff, interval time.Duration, log *logrus.Entry) *Watcher {
	return &Watcher{
		check: check, events: ev, backoffs: backoffs, log: log, now: time.Now,
		reset:     make(chan struct{}, 1),
		interval:  interval,
		state:     map[string]tagState{},
		lastOK:    map[string]time.Time{},
		skipUntil: map[string]time.Time{},
		rnd:       rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
}

// KeepStateIn keeps the state in path across restarts (watchstate.go);
// platform is the daemon's. Called before the watch runs.
func (w *Watcher) KeepStateIn(path, platform string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.statePath, w.platform = path, platform
}

// LoadState reads the kept state, the first time it is called: when the
// watch starts with an interval, else at its first round (a SIGHUP turned
// it on). A file that cannot be used is a warning: the watch starts from
// nothing, and its first round rewrites the file.
func (w *Watcher) LoadState() {
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
func (w *Watcher) saveState() {
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
func (w *Watcher) Interval() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.interval
}

// SetInterval changes the interval (a reload): the wait in progress is
// dropped and the next round starts as a first one does (a random delay of
// up to a tenth of the new interval, at most 30 s). 0 stops the rounds; the
// state and the gauges stay as last seen.
func (w *Watcher) SetInterval(d time.Duration) {
	w.mu.Lock()
	w.interval = d
	w.mu.Unlock()
	select {
	case w.reset <- struct{}{}:
	default:
	}
}

// Auth is the auth file in force (nil: none).
func (w *Watcher) Auth() Auth {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.auth
}

// SetAuth replaces the auth file (a reload); the next round uses it, the
// round in progress keeps the one it started with.
func (w *Watcher) SetAuth(f Auth) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.auth = f
}

// delay is the wait before the next round.
func (w *Watcher) delay(iv time.Duration, first bool) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if first {
		return time.Duration(w.rnd.Float64() * float64(min(iv/10, watchFirstMax)))
	}
	return time.Duration(float64(iv) * (1 - watchJitter + 2*watchJitter*w.rnd.Float64()))
}

// Run runs rounds until ctx ends; it returns once the round in progress
// (canceled by ctx) has returned.
func (w *Watcher) Run(ctx context.Context) {
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
		w.Round(ctx, iv)
	}
}

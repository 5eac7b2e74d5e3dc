// Package daemon wires wharfd together: configuration (daemon.json and
// flags) and its reload on SIGHUP, the data-root lock, the image store and
// registry service, the signature policy, the update watch, the event log,
// the API listeners (TLS with client certificates on tcp://), and a
// graceful shutdown. It implements the API's backend by delegating to
// graph; the work itself happens in the packages below it.
package daemon

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/platforms"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/server"
	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/daemon/metrics"
	"github.com/wharfproject/wharf/graph"
	"github.com/wharfproject/wharf/graph/updates"
	"github.com/wharfproject/wharf/internal/atomicfile"
	"github.com/wharfproject/wharf/registry"
)

// imageService is what the daemon needs of graph.Service: the API backends
// plus the counts of /info and /system/df, and the store check.
type imageService interface {
	server.ImageBackend
	server.RegistryBackend
	storeChecker
	scrubber
	Count() int
	DiskUsage(ctx context.Context) (*types.DiskUsage, error)
	// CheckRemoteSkipping is the update check the watch runs (watch.go).
	CheckRemoteSkipping(ctx context.Context, opts types.RemoteCheckOptions, skip func(registry string) bool, emit func(types.RemoteCheckResult) error) error
	// SetPolicy installs the signature policy (trust.go); nil: none.
	SetPolicy(j graph.Judge)
	// SetLayerIndexBudget applies layer-index-budget (a reload).
	SetLayerIndexBudget(n int64)
	Close() error
}

// Options are the build facts and hooks of a daemon run.
type Options struct {
	Version   string
	GitCommit string
	BuildTime string
	Logger    *logrus.Logger
	// Ready, when set, is called with the listen addresses once the API
	// accepts connections (tests wait on it instead of sleeping).
	Ready func(addrs []string)
	// Env is where the defaults come from (certs dirs of a reload); zero = OSEnv().
	Env Env
	// Reload asks for a reload (cmd/wharfd sends SIGHUP here); each value
	// re-reads the configuration with LoadConfig and applies what can
	// change at run time (reload.go).
	Reload     <-chan os.Signal
	LoadConfig ConfigLoader
}

// Daemon implements server.Backend: images and registry operations are
// the image service's (images.go), system endpoints and events are its own.
type Daemon struct {
	images   imageService
	events   *Events
	registry *registry.Service
	cfg      *Config
	opts     Options
	metrics  *metrics.Metrics // nil when off (metrics.go)
	id       string
	warnings []string
	// scrubWarnings are the scrub's, set when it ends (check.go).
	scrubWarnings atomic.Pointer[[]string]
	// policyRevision is the signature policy's, "" without one (reload.go).
	policyRevision string
	// layerIndexBudget is the layer-index-budget in force (reload.go).
	layerIndexBudget int64
	// policy is the one installed and its file, for trust show (trust.go).
	policy atomic.Pointer[installedPolicy]
	// watch runs the update check on a schedule (watch.go); its interval
	// 0 (off) unless check-remote-interval is set.
	watch *updates.Watcher
}

var (
	_ server.Backend       = (*Daemon)(nil)
	_ server.EventsBackend = (*Events)(nil)
	_ graph.EventLogger    = (*Events)(nil)
	_ imageService         = (*graph.Service)(nil)
)

// SubscribeEvents implements server.EventsBackend.
func (d *Daemon) SubscribeEvents(since, until time.Time, f types.Filters) ([]types.EventMessage, <-chan types.EventMessage, func()) {
	return d.events.SubscribeEvents(since, until, f)
}

// store returns the image store (named for readability in info.go).
func (d *Daemon) storeCount() int { return d.images.Count() }

// shutdownTimeout bounds how long in-flight requests may run after SIGTERM
// before their connections are closed (systemd's default stop timeout is 90 s;
// 10 s keeps restarts quick while letting a manifest push finish).
const shutdownTimeout = 10 * time.Second

// Run starts wharfd with cfg and serves until ctx is done, then shuts down
// gracefully. cfg must have passed LoadConfig.
func Run(ctx context.Context, cfg *Config, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = logrus.StandardLogger()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if err := configureLogger(opts.Logger, cfg); err != nil {
		return err
	}
	log := logrus.NewEntry(opts.Logger)

	lock, err := lockRoot(cfg.Root)
	if err != nil {
		return err
	}
	defer func() {
		if err := lock.unlock(); err != nil {
			log.WithError(err).Warn("releasing the data-root lock")
		}
	}()

	id, err := engineID(cfg.Root)
	if err != nil {
		return err
	}

	mt := newMetrics(cfg) // nil when off (metrics.go)
	env := opts.Env
	if env.Getenv == nil {
		env = OSEnv()
	}
	ropts := cfg.registryOptions(env)
	ropts.Timeout = cfg.RegistryTimeout
	ropts.UserAgent = "wharf/" + opts.Version + " (" + runtime.GOOS + ")"
	ropts.Logger = log.WithField("module", "registry")
	ropts.Observer = registryObserver(mt)
	reg, err := registry.NewService(ropts)
	if err != nil {
		return fmt.Errorf("registry configuration: %w", err)
	}

	evs := NewEvents()
	// The daemon's platform, the default for pulls and for choosing
	// from an index: this machine's, in its normalised spelling
	// (arm64 without the v8 variant, as the records keep it).
	platform := platforms.Normalize(platforms.DefaultSpec())
	store, err := graph.New(ctx, graph.Options{
		Root:                   cfg.Root,
		Registry:               reg,
		Events:                 evs,
		Platform:               platform,
		MaxConcurrentDownloads: cfg.MaxConcurrentDownloads,
		Logger:                 log.WithField("module", "graph"),
		Transfers:              transferObserver(mt),
		Lock:                   lock.Lock,
		LayerIndexBudget:       cfg.LayerIndexBudget,
		Contents:               layerIndexObserver(mt),
	})
	if err != nil {
		return fmt.Errorf("opening the image store at %s: %w", cfg.Root, err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.WithError(err).Warn("closing the image store")
		}
	}()

	if mt != nil {
		mt.WatchStore(store.BlobUsage)
		mt.WatchCommits(store.Commits)
		mt.WatchPartialRestarts(store.PartialRestarts)
		mt.WatchTrust(trustCounts(store))
	}
	pol, err := loadPolicy(cfg, env)
	if err != nil {
		return err
	}
	if pol != nil {
		log.WithField("revision", pol.Revision()).Info("signature policy loaded")
	}
	d := &Daemon{images: store, events: evs, registry: reg, cfg: cfg, opts: opts, id: id, metrics: mt, policyRevision: policyRevision(pol), layerIndexBudget: cfg.LayerIndexBudget}
	d.installPolicy(pol, cfg, env)
	d.watch = newWatcher(store, evs, reg.Backoffs, cfg.CheckRemoteInterval, log.WithField("module", "watch"))
	d.watch.SetAuth(watchAuth(cfg.watchAuth))
	d.watch.DiffWith(store) // the summaries of its outdated and newer-version events
	d.watch.KeepStateIn(filepath.Join(cfg.Root, updates.StateFile), platforms.Format(platform))
	if mt != nil {
		mt.WatchRateLimits(d.rateLimitSamples)
		mt.WatchCheckRemote(watchSample(d.watch))
	}
	for _, w := range cfg.warnings {
		log.Warn(w)
	}
	d.warnings = append(d.warnings, cfg.warnings...)
	return d.serve(ctx, log)
}

func (d *Daemon) serve(ctx context.Context, log *logrus.Entry) error {
	var tlsCfg *tls.Config
	if d.cfg.TLSVerify {
		c, err := d.cfg.TLS().serverConfig()
		if err != nil {
			return fmt.Errorf("API TLS: %w", err)
		}
		tlsCfg = c
	}
	stopMetrics, err := d.serveMetrics(log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	ls, err := listen(d.cfg.Hosts, tlsCfg, d.cfg.AllowInsecureTCP, log)
	if err != nil {
		return err
	}
	defer func() {
		for _, l := range ls {
			closeListener(l)
		}
	}()

	handler := server.New(d, server.Options{ServerVersion: d.opts.Version, MinAPIVersion: d.cfg.MinAPIVersion, Logger: log.WithField("module", "api"), Observer: apiObserver(d.metrics)})
	srv := &http.Server{
		Handler: handler,
		// Headers must arrive within 30 s (slow-loris); bodies and
		// streams (pull, load, events) have no deadline.
		ReadHeaderTimeout: 30 * time.Second,
		// Idle keep-alive connections are dropped after 2 minutes.
		IdleTimeout: 2 * time.Minute,
		// The request line and headers (a query string, X-Registry-Auth)
		// are capped at 1 MiB, net/http's default, said here so that it
		// stays: beyond it clients get 431 (ClientInputSuite.TestHugeQueryStrings).
		MaxHeaderBytes: 1 << 20,
	}
	srv.RegisterOnShutdown(d.events.Close)

	errc := make(chan error, len(ls))
	var wg sync.WaitGroup
	addrs := make([]string, 0, len(ls))
	for _, l := range ls {
		addrs = append(addrs, l.host.Proto+"://"+l.Addr().String())
		// Logged before the scrub starts, in this order every time: the
		// socket accepts (and queues) connections from here on, and the
		// log is how operators and tests see that the API came first.
		log.Infof("API listening on %s", l.host)
		wg.Add(1)
		go func(l listener) {
			defer wg.Done()
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("serving %s: %w", l.host, err)
			}
		}(l)
	}
	stopWatch := d.startWatch(ctx, log)
	defer stopWatch()
	log.WithFields(logrus.Fields{"version": d.opts.Version, "data-root": d.cfg.Root}).Info("wharfd started")
	// The orphan collection and the quick check, off the start-up path:
	// the API answers first (graph/store scrub.go).
	d.startScrub(d.images, log.WithField("module", "graph"))
	if d.opts.Ready != nil {
		d.opts.Ready(addrs)
	}

	var serveErr error
wait:
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			break wait
		case serveErr = <-errc:
			log.WithError(serveErr).Error("API server failed; shutting down")
			break wait
		case <-d.opts.Reload:
			d.reload(log)
		}
	}

	// Events subscribers end at once (RegisterOnShutdown); other requests
	// get shutdownTimeout to finish, then their connections are closed.
	stopWatch() // its round in progress ends with its context
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.WithError(err).Warn("requests still running after the shutdown timeout; closing their connections")
		_ = srv.Close()
	}
	d.events.Close()
	wg.Wait()
	log.Info("wharfd stopped")
	return serveErr
}

// configureLogger applies log-level and debug (debug wins).
func configureLogger(l *logrus.Logger, cfg *Config) error {
	lvl, err := logrus.ParseLevel(cfg.LogLevel)
	if err != nil {
		return fmt.Errorf("invalid value for \"log-level\": %q", cfg.LogLevel)
	}
	if cfg.Debug {
		lvl = logrus.DebugLevel
	}
	l.SetLevel(lvl)
	return nil
}

// engineID returns the daemon's stable ID (<root>/engine-id), creating it
// on first start, as dockerd does.
func engineID(root string) (string, error) {
	path := filepath.Join(root, "engine-id")
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("reading engine ID: %w", err)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	h := hex.EncodeToString(b[:])
	id := fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
	if err := atomicfile.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing engine ID: %w", err)
	}
	return id, nil
}

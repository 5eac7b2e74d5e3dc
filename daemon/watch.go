package daemon

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/daemon/metrics"
	"github.com/wharfproject/wharf/graph/updates"
	"github.com/wharfproject/wharf/registry"
)

// The watch is graph/updates' Watcher; the daemon wires it: the interval
// (check-remote-interval, validated in config.go), the credentials
// (check-remote-auth-file, authfile.go), the registry hosts backed off, the
// event log, the gauges and start and stop.

// watchMinInterval is the shortest check-remote-interval accepted (1 s,
// for tests: the integration tests and the bench watch at 1 s); under
// watchShortInterval the daemon warns (log and /info): each round asks
// every registry about every tag, and Diun's default is 6 hours.
const (
	watchMinInterval   = time.Second
	watchShortInterval = time.Minute
)

// newWatcher is the watch over check, logging to ev, skipping the hosts
// backoffs names.
func newWatcher(check updates.Check, ev updates.EventLog, backoffs func() []registry.HostBackoff, interval time.Duration, log *logrus.Entry) *updates.Watcher {
	var bo func() []updates.HostBackoff
	if backoffs != nil {
		bo = func() []updates.HostBackoff {
			in := backoffs()
			out := make([]updates.HostBackoff, len(in))
			for i, b := range in {
				out[i] = updates.HostBackoff{Host: b.Host, Until: b.Until, Resets: b.Resets}
			}
			return out
		}
	}
	return updates.NewWatcher(check, ev, bo, interval, log)
}

// watchAuth is f as the watch's credentials; a nil file is none (asked
// anonymously), not a file with nothing in it.
func watchAuth(f *authFile) updates.Auth {
	if f == nil {
		return nil
	}
	return f
}

// watchFile is the auth file the watch presents now (nil: none).
func watchFile(w *updates.Watcher) *authFile {
	f, _ := w.Auth().(*authFile)
	return f
}

// watchSample is the watch's state as the check-remote gauges read it.
func watchSample(w *updates.Watcher) metrics.CheckRemoteState {
	return func() metrics.CheckRemoteSample {
		s := w.Sample()
		out := metrics.CheckRemoteSample{BaseOutdated: s.BaseOutdated, Rounds: s.Rounds, Interval: s.Interval}
		for _, r := range s.Registries {
			out.Registries = append(out.Registries, metrics.CheckRemoteRegistry{Registry: r.Registry, Outdated: r.Outdated, Newer: r.Newer, LastSuccess: r.LastSuccess})
		}
		return out
	}
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
		d.watch.LoadState()
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.watch.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// Credentials are the auth file's sets for a round, as the watch takes
// them (updates.Auth): which registry a set or a failed helper is for is
// matched as the check matches the keys (registry.Credentials.For).
func (f *authFile) Credentials(ctx context.Context) (updates.RoundAuth, []error) {
	ra, errs := f.credentials(ctx)
	sets := ra.sets
	return updates.RoundAuth{
		Sets:  sets,
		Skips: ra.skips,
		Has:   func(reg string) bool { return (registry.Credentials{Registries: sets}).For(reg) != nil },
	}, errs
}

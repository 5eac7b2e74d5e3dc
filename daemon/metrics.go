package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/server"
	"github.com/wharfproject/wharf/daemon/metrics"
	"github.com/wharfproject/wharf/graph"
	"github.com/wharfproject/wharf/registry"
)

// The metrics endpoint (--metrics-addr HOST:PORT, "metrics-addr" in
// daemon.json, as dockerd's): Prometheus metrics at http://HOST:PORT/metrics,
// off by default. It is a listener of its own, never a route of the API
// socket: the API is the daemon's whole authority and a scraper needs none
// of it, and the metrics carry no credentials, so they are served without
// auth. Like dockerd, any address is accepted, but one that is not
// loopback is logged as a warning and listed in /info's warnings: registry
// host names, image traffic and the store's size are then readable by the
// network (docs/security.md).

// validateMetricsAddr checks "metrics-addr": empty (off) or HOST:PORT,
// port 0 asking for any free port (the log names the one taken).
func validateMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("invalid value for \"metrics-addr\": %q: want HOST:PORT, such as 127.0.0.1:9323", addr)
	}
	return nil
}

// newMetrics is the daemon's metrics, or nil when they are off.
func newMetrics(cfg *Config) *metrics.Metrics {
	if cfg.MetricsAddr == "" {
		return nil
	}
	return metrics.New()
}

// The observers of each package: nil interfaces when the metrics are off
// (a nil *Metrics in an interface would not be nil).
func registryObserver(m *metrics.Metrics) registry.Observer {
	if m == nil {
		return nil
	}
	return m
}

func transferObserver(m *metrics.Metrics) graph.TransferObserver {
	if m == nil {
		return nil
	}
	return m
}

func layerIndexObserver(m *metrics.Metrics) graph.LayerIndexObserver {
	if m == nil {
		return nil
	}
	return m.LayerIndexes()
}

func apiObserver(m *metrics.Metrics) server.Observer {
	if m == nil {
		return nil
	}
	return m
}

// verdictCounter is what the trust families read from the image store
// (graph/distribution's verdict counters, forwarded by graph.Service).
type verdictCounter interface {
	Verifications() int64
	Verdicts() (accepted, rejected, noPolicy int64)
}

// trustCounts reads vc at scrape time for wharf_trust_verifications_total
// and wharf_trust_verdicts_total{decision}.
func trustCounts(vc verdictCounter) metrics.TrustCounts {
	return func() metrics.TrustSample {
		a, r, n := vc.Verdicts()
		return metrics.TrustSample{Verifications: vc.Verifications(), Accepted: a, Rejected: r, NoPolicy: n}
	}
}

// metricsTimeouts: a scrape is one small request; headers must come within
// 10 s and an idle scraper's connection is dropped after 2 minutes (a
// Prometheus server scrapes every 15 s to 1 min on a kept-alive connection).
const (
	metricsHeaderTimeout = 10 * time.Second
	metricsIdleTimeout   = 2 * time.Minute
)

// serveMetrics starts the metrics listener when the metrics are on. The
// returned stop closes it. A non-loopback address is allowed, as in
// dockerd, with a warning in the log and in /info.
func (d *Daemon) serveMetrics(log *logrus.Entry) (stop func(), err error) {
	if d.metrics == nil {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", d.cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("metrics-addr: %w", err)
	}
	addr := l.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		w := fmt.Sprintf("metrics are served without authentication on %s, which is not a loopback address: anyone who can reach it reads the registries this daemon talks to, its traffic and its store's size", addr)
		log.Warn(w)
		d.warnings = append(d.warnings, w)
	}
	srv := &http.Server{
		Handler:           d.metrics.Handler(log.WithField("module", "metrics")),
		ReadHeaderTimeout: metricsHeaderTimeout,
		IdleTimeout:       metricsIdleTimeout,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.WithError(err).Error("metrics listener failed")
		}
	}()
	log.Infof("metrics listening on http://%s/metrics", addr)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		<-done
	}, nil
}

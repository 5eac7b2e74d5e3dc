package daemon

import (
	"io"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/daemon/metrics"
)

func TestMetricsAddrConfig(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		flags      []string
		want       string
		wantErr    string
	}{
		{name: "off by default", file: `{}`},
		{name: "flag", file: `{}`, flags: []string{"--metrics-addr", "127.0.0.1:9323"}, want: "127.0.0.1:9323"},
		{name: "file", file: `{"metrics-addr":"[::1]:9323"}`, want: "[::1]:9323"},
		{name: "any free port", file: `{"metrics-addr":"127.0.0.1:0"}`, want: "127.0.0.1:0"},
		{name: "both", file: `{"metrics-addr":"127.0.0.1:1"}`, flags: []string{"--metrics-addr", "127.0.0.1:2"},
			wantErr: "specified both as a flag and in the configuration file: metrics-addr"},
		{name: "no port", file: `{"metrics-addr":"127.0.0.1"}`, wantErr: `invalid value for "metrics-addr": "127.0.0.1": want HOST:PORT`},
		{name: "bad port", file: `{"metrics-addr":"127.0.0.1:http"}`, wantErr: `invalid value for "metrics-addr"`},
		{name: "port out of range", file: `{"metrics-addr":"127.0.0.1:65536"}`, wantErr: `invalid value for "metrics-addr"`},
		{name: "a URL", file: `{"metrics-addr":"http://127.0.0.1:9323"}`, wantErr: `invalid value for "metrics-addr"`},
		{name: "not a string", file: `{"metrics-addr":9323}`, wantErr: `invalid value for "metrics-addr"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, fs := parseFlags(t, append([]string{"--config-file", writeConfig(t, tc.file)}, tc.flags...)...)
			err := LoadConfig(cfg, fs, rootEnv())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MetricsAddr != tc.want {
				t.Errorf("metrics-addr %q, want %q", cfg.MetricsAddr, tc.want)
			}
		})
	}
}

// A loopback address is served quietly; any other is served with a
// warning in the log and in /info's warnings.
func TestMetricsListenerWarnsOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		warn bool
	}{{"127.0.0.1:0", false}, {"0.0.0.0:0", true}} {
		l := logrus.New()
		l.SetOutput(io.Discard)
		d := &Daemon{cfg: &Config{MetricsAddr: tc.addr}, metrics: metrics.New()}
		stop, err := d.serveMetrics(logrus.NewEntry(l))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(d.warnings) == 1 && strings.Contains(d.warnings[0], "not a loopback address"); got != tc.warn {
			t.Errorf("%s: warnings %q, want a warning: %v", tc.addr, d.warnings, tc.warn)
		}
		stop()
	}
	// Off: nothing listens.
	d := &Daemon{cfg: &Config{}}
	stop, err := d.serveMetrics(logrus.NewEntry(logrus.New()))
	if err != nil || len(d.warnings) != 0 {
		t.Fatalf("metrics off: %v %v", err, d.warnings)
	}
	stop()
}

// With the metrics off, each package gets a nil interface (a nil *Metrics
// inside one would not be nil, and would be called).
func TestObserversAreNilWhenMetricsAreOff(t *testing.T) {
	m := newMetrics(&Config{})
	if m != nil {
		t.Fatal("metrics built without metrics-addr")
	}
	if registryObserver(m) != nil || transferObserver(m) != nil || apiObserver(m) != nil {
		t.Error("an observer interface holds a nil *Metrics")
	}
	on := newMetrics(&Config{MetricsAddr: "127.0.0.1:0"})
	if on == nil || registryObserver(on) == nil || transferObserver(on) == nil || apiObserver(on) == nil {
		t.Error("metrics on, but an observer is missing")
	}
}

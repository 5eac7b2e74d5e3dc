package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

func TestCertsDirs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string
		flags []string
		env   Env
		want  []string
	}{
		{name: "root default", file: `{}`, env: rootEnv(), want: []string{"/etc/wharf/certs.d", "/etc/docker/certs.d"}},
		{name: "rootless default", file: `{}`, env: userEnv(map[string]string{"XDG_CONFIG_HOME": "/x"}),
			want: []string{"/x/wharf/certs.d", "/etc/wharf/certs.d", "/etc/docker/certs.d"}},
		{name: "rootless without XDG", file: `{}`, env: userEnv(nil),
			want: []string{"/home/u/.config/wharf/certs.d", "/etc/wharf/certs.d", "/etc/docker/certs.d"}},
		{name: "flags, the old name after", file: `{}`, flags: []string{"--registry-certs-dir", "/old", "--certs-dir", "/a", "--certs-dir", "/b"}, env: rootEnv(),
			want: []string{"/a", "/b", "/old"}},
		{name: "file", file: `{"certs-dirs":["/f"]}`, env: rootEnv(), want: []string{"/f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, fs := parseFlags(t, append([]string{"--config-file", writeConfig(t, tc.file)}, tc.flags...)...)
			if err := LoadConfig(cfg, fs, tc.env); err != nil {
				t.Fatal(err)
			}
			if got := cfg.certsDirs(tc.env); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("certs dirs %v, want %v", got, tc.want)
			}
		})
	}
	cfg, fs := parseFlags(t, "--config-file", writeConfig(t, `{"certs-dirs":["rel"]}`))
	if err := LoadConfig(cfg, fs, rootEnv()); err == nil || !strings.Contains(err.Error(), `invalid value for "certs-dirs"`) {
		t.Errorf("relative certs dir: %v", err)
	}
}

// TestReloadAppliesRegistryAndLogLevelKeepsOldOnError runs a daemon
// in-process, edits daemon.json and sends reloads: registry settings and
// the log level change and are logged; an invalid file is an error in the
// log and changes nothing; the daemon keeps serving throughout.
func TestReloadAppliesRegistryAndLogLevelKeepsOldOnError(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "w.sock")
	conf := writeConfig(t, `{"log-level":"info"}`)
	cfg, fs := parseFlags(t, "-H", "unix://"+sock, "--data-root", filepath.Join(dir, "root"), "--config-file", conf, "--certs-dir", filepath.Join(dir, "certs"))
	env := rootEnv()
	loader := NewConfigLoader(cfg, fs, env)
	if err := LoadConfig(cfg, fs, env); err != nil {
		t.Fatal(err)
	}
	logger, hook := logtest.NewNullLogger()
	hup := make(chan os.Signal)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Logger: logger, Env: env, Reload: hup, LoadConfig: loader, Ready: func([]string) { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon not ready")
	}
	// reload sends SIGHUP and waits until the daemon logged msg.
	reload := func(msg string) *logrus.Entry {
		t.Helper()
		n := len(hook.AllEntries())
		hup <- syscall.SIGHUP // unbuffered: taken by the serve loop
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			for _, e := range hook.AllEntries()[n:] {
				if strings.HasPrefix(e.Message, msg) {
					return e
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("no %q logged after SIGHUP: %v", msg, hook.AllEntries()[n:])
		return nil
	}
	info := func() (debug bool, mirrors []string) {
		t.Helper()
		resp, err := unixClient(sock).Get("http://wharf/v1.50/info")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v struct {
			Debug          bool
			RegistryConfig struct{ Mirrors []string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v.Debug, v.RegistryConfig.Mirrors
	}

	if err := os.WriteFile(conf, []byte(`{"log-level":"debug","registry-mirrors":["https://mirror.example"],"max-concurrent-downloads":5,"layer-index-budget":"2MiB"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e := reload("configuration reloaded")
	changes, _ := e.Data["changes"].(string)
	if !strings.Contains(changes, "registry-mirrors") || !strings.Contains(changes, "log-level: info → debug") || !strings.Contains(changes, "layer-index-budget: default (1GiB) → 2MiB") {
		t.Errorf("changes %q", changes)
	}
	if debug, mirrors := info(); !debug || strings.Join(mirrors, ",") != "https://mirror.example/" {
		t.Errorf("after the reload: debug %v mirrors %v", debug, mirrors)
	}
	var warned bool
	for _, e := range hook.AllEntries() {
		warned = warned || (e.Level == logrus.WarnLevel && strings.Contains(e.Message, "max-concurrent-downloads changed"))
	}
	if !warned {
		t.Error("a setting only a restart applies was not named")
	}

	if err := os.WriteFile(conf, []byte(`{"log-level":"loud"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if e := reload("reload failed"); e.Level != logrus.ErrorLevel {
		t.Errorf("a failed reload logged at %s", e.Level)
	}
	if debug, mirrors := info(); !debug || len(mirrors) != 1 {
		t.Errorf("after a failed reload: debug %v mirrors %v, want the running configuration", debug, mirrors)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

package registry

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

// writeHosts writes <dir>/<host>/hosts.toml.
func writeHosts(t *testing.T, dir, host, body string) {
	t.Helper()
	p := filepath.Join(dir, host)
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "hosts.toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func warnings(h *logtest.Hook) int {
	n := 0
	for _, e := range h.AllEntries() {
		if e.Level == logrus.WarnLevel {
			n++
		}
	}
	return n
}

// TestHostsTomlMirrorFirstThenUpstreamWithOneWarning: a hosts.toml mirror
// answers first and is named in ServedBy; when it dies, reads fall back to
// the upstream, succeed, and the burst of failures is one warning.
func TestHostsTomlMirrorFirstThenUpstreamWithOneWarning(t *testing.T) {
	up, mirror := newFakeRegistry(t), newFakeRegistry(t)
	up.addImage("team/app", "1", "linux", "amd64", "")
	mirror.addImage("team/app", "1", "linux", "amd64", "")
	dir := t.TempDir()
	writeHosts(t, dir, up.host(), fmt.Sprintf("[host.\"http://%s\"]\ncapabilities = [\"pull\", \"resolve\"]\n", mirror.host()))
	logger, hook := logtest.NewNullLogger()
	s := testService(t, ServiceOptions{CertsDirs: []string{dir}, Logger: logrus.NewEntry(logger)})
	ctx := context.Background()
	req := InspectRequest{Name: up.host() + "/team/app:1", Platform: linuxAmd64()}

	img, err := s.Inspect(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if img.ServedBy != mirror.host() || img.Registry != up.host() {
		t.Errorf("served by %q for registry %q, want the mirror %q for %q", img.ServedBy, img.Registry, mirror.host(), up.host())
	}
	if n := up.count(); n != 0 {
		t.Errorf("the upstream saw %d requests while the mirror answered", n)
	}

	mirror.srv.Close()
	for i := 0; i < 3; i++ {
		img, err = s.Inspect(ctx, req)
		if err != nil {
			t.Fatalf("inspect %d with the mirror down: %v", i, err)
		}
		if img.ServedBy != up.host() {
			t.Errorf("served by %q, want the upstream %q", img.ServedBy, up.host())
		}
	}
	if n := warnings(hook); n != 1 {
		t.Errorf("%d warnings for one burst of mirror failures, want 1: %v", n, hook.AllEntries())
	}
}

// TestMirrorGetsNoUpstreamCredentials: credentials go to their own host
// only; a mirror gets none of the upstream's, the upstream gets them.
func TestMirrorGetsNoUpstreamCredentials(t *testing.T) {
	up, mirror := newFakeRegistry(t), newFakeRegistry(t)
	up.basicAuth, up.user, up.pass = true, "u", "p"
	up.addImage("team/app", "1", "linux", "amd64", "")
	var mu sync.Mutex
	var mirrorAuth []string
	mirror.hook = func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		mirrorAuth = append(mirrorAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		writeErr(w, http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")
		return true
	}
	dir := t.TempDir()
	writeHosts(t, dir, up.host(), fmt.Sprintf("[host.\"http://%s\"]\n", mirror.host()))
	s := testService(t, ServiceOptions{CertsDirs: []string{dir}})
	creds := Credentials{Auth: &registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: up.host()}}
	img, err := s.Inspect(context.Background(), InspectRequest{Name: up.host() + "/team/app:1", Platform: linuxAmd64(), Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	if img.ServedBy != up.host() {
		t.Errorf("served by %q, want the upstream", img.ServedBy)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(mirrorAuth) == 0 {
		t.Fatal("the mirror was not asked")
	}
	for _, a := range mirrorAuth {
		if a != "" {
			t.Errorf("the mirror received Authorization %q", a)
		}
	}
}

// TestHostsTomlServerPathAndOverridePath: a server or mirror under a path
// gets every /v2 request under it; override_path uses the path as-is.
func TestHostsTomlServerPathAndOverridePath(t *testing.T) {
	for _, tc := range []struct{ name, url, extra, prefix string }{
		{"prefix", "/prefix", "", "/prefix/v2/"},
		{"override_path", "/custom", "override_path = true\n", "/custom/"},
		{"override_path at the host's root", "", "override_path = true\n", "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mirror := newFakeRegistry(t)
			mirror.addImage("team/app", "1", "linux", "amd64", "")
			var mu sync.Mutex
			var bad []string
			mirror.hook = func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.HasPrefix(r.URL.Path, tc.prefix) {
					mu.Lock()
					bad = append(bad, r.URL.Path)
					mu.Unlock()
					http.NotFound(w, r)
					return true
				}
				r.URL.Path = "/v2/" + strings.TrimPrefix(r.URL.Path, tc.prefix)
				return false
			}
			up := newFakeRegistry(t) // never asked: the mirror has it
			dir := t.TempDir()
			writeHosts(t, dir, up.host(), fmt.Sprintf("[host.\"http://%s%s\"]\n%s", mirror.host(), tc.url, tc.extra))
			s := testService(t, ServiceOptions{CertsDirs: []string{dir}})
			img, err := s.Inspect(context.Background(), InspectRequest{Name: up.host() + "/team/app:1", Platform: linuxAmd64()})
			if err != nil {
				t.Fatal(err)
			}
			if img.ServedBy != mirror.host() || up.count() != 0 {
				t.Errorf("served by %q (upstream asked %d times), want the mirror", img.ServedBy, up.count())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bad) > 0 {
				t.Errorf("requests outside %s: %v", tc.prefix, bad)
			}
		})
	}
}

// TestReloadSwapsMirrorsAndKeepsTheOldOnError: Reload re-reads the certs
// dirs; a broken hosts.toml is an error and changes nothing.
func TestReloadSwapsMirrorsAndKeepsTheOldOnError(t *testing.T) {
	up, mirror := newFakeRegistry(t), newFakeRegistry(t)
	up.addImage("team/app", "1", "linux", "amd64", "")
	mirror.addImage("team/app", "1", "linux", "amd64", "")
	dir := t.TempDir()
	opts := ServiceOptions{CertsDirs: []string{dir}}
	s := testService(t, opts)
	ctx := context.Background()
	req := InspectRequest{Name: up.host() + "/team/app:1", Platform: linuxAmd64()}
	servedBy := func() string {
		t.Helper()
		img, err := s.Inspect(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return img.ServedBy
	}
	if got := servedBy(); got != up.host() {
		t.Fatalf("before the reload: served by %q", got)
	}
	writeHosts(t, dir, up.host(), fmt.Sprintf("[host.\"http://%s\"]\n", mirror.host()))
	opts.InsecureRegistries = []string{"10.0.0.0/8"}
	changes, err := s.Reload(opts)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(changes, "\n")
	if !strings.Contains(joined, mirror.host()) || !strings.Contains(joined, "10.0.0.0/8") {
		t.Errorf("changes %q name neither the mirror nor the CIDR", changes)
	}
	if got := servedBy(); got != mirror.host() {
		t.Errorf("after the reload: served by %q, want the mirror", got)
	}
	writeHosts(t, dir, up.host(), "capabilities = [")
	if _, err := s.Reload(opts); err == nil {
		t.Fatal("a broken hosts.toml reloaded without an error")
	}
	if got := servedBy(); got != mirror.host() {
		t.Errorf("after a failed reload: served by %q, want the mirror still", got)
	}
	if changes, err := s.Reload(ServiceOptions{CertsDirs: []string{t.TempDir()}, InsecureRegistries: opts.InsecureRegistries}); err != nil || len(changes) != 2 {
		t.Errorf("reload to an empty certs dir: %v, %q (want certs-dirs and hosts.toml)", err, changes)
	}
	if got := servedBy(); got != up.host() {
		t.Errorf("mirror removed: served by %q, want the upstream", got)
	}
}

// TestDeadMirrorIsPassedOverThenTriedAgain: after a failure the mirror is
// passed over (no request to it) until the retry window ends; then it is
// asked again, and its answer ends the burst with one info line.
func TestDeadMirrorIsPassedOverThenTriedAgain(t *testing.T) {
	up, mirror := newFakeRegistry(t), newFakeRegistry(t)
	up.addImage("team/app", "1", "linux", "amd64", "")
	mirror.addImage("team/app", "1", "linux", "amd64", "")
	var mu sync.Mutex
	down := true
	mirror.hook = func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if down {
			writeErr(w, http.StatusServiceUnavailable, "UNAVAILABLE", "down")
			return true
		}
		return false
	}
	dir := t.TempDir()
	writeHosts(t, dir, up.host(), fmt.Sprintf("[host.\"http://%s\"]\n", mirror.host()))
	logger, hook := logtest.NewNullLogger()
	s := testService(t, ServiceOptions{CertsDirs: []string{dir}, Logger: logrus.NewEntry(logger)})
	s.mirrorRetry = time.Hour
	ctx := context.Background()
	req := InspectRequest{Name: up.host() + "/team/app:1", Platform: linuxAmd64()}
	served := func() string {
		t.Helper()
		img, err := s.Inspect(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return img.ServedBy
	}
	if got := served(); got != up.host() {
		t.Fatalf("mirror answering 503: served by %q", got)
	}
	mirror.reset()
	if got := served(); got != up.host() || mirror.count() != 0 {
		t.Errorf("within the window: served by %q, the mirror asked %d times, want 0", got, mirror.count())
	}
	mu.Lock()
	down = false
	mu.Unlock()
	s.mirrorStateOf(mirror.host()).until.Store(0) // the window is over
	if got := served(); got != mirror.host() {
		t.Errorf("after the window: served by %q, want the mirror", got)
	}
	var infos, warns int
	for _, e := range hook.AllEntries() {
		switch {
		case e.Level == logrus.WarnLevel:
			warns++
		case e.Level == logrus.InfoLevel && e.Message == "mirror answers again":
			infos++
		}
	}
	if warns != 1 || infos != 1 {
		t.Errorf("%d warnings and %d recoveries logged, want 1 and 1", warns, infos)
	}
}

// TestHostsTomlServerTakesTheRegistrysPlace: a hosts.toml server is the
// registry for its name: login, inspect and the credentials go there.
func TestHostsTomlServerTakesTheRegistrysPlace(t *testing.T) {
	real := newFakeRegistry(t)
	real.basicAuth, real.user, real.pass = true, "u", "p"
	real.addImage("team/app", "1", "linux", "amd64", "")
	dir := t.TempDir()
	writeHosts(t, dir, "registry.invalid", fmt.Sprintf("server = \"http://%s\"\n", real.host()))
	s := testService(t, ServiceOptions{CertsDirs: []string{dir}})
	ac := &registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: "registry.invalid"}
	if _, err := s.Login(context.Background(), ac); err != nil {
		t.Fatalf("login through the hosts.toml server: %v", err)
	}
	img, err := s.Inspect(context.Background(), InspectRequest{Name: "registry.invalid/team/app:1", Platform: linuxAmd64(), Credentials: Credentials{Auth: ac}})
	if err != nil {
		t.Fatal(err)
	}
	if img.Registry != "registry.invalid" || img.ServedBy != real.host() {
		t.Errorf("registry %q served by %q", img.Registry, img.ServedBy)
	}
}

package integration

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
)

// RegistryTransportSuite: how wharfd reaches registries — per-host
// transports, the scheme of loopback and insecure registries, shared token
// fetches, upload stalls, challenge and token parsing, credentials in server
// addresses, and the registry timeout setting (issue 10, findings 6-10, 12
// and 13).
type RegistryTransportSuite struct{}

var _ = check.Suite(&RegistryTransportSuite{})

func (s *RegistryTransportSuite) SetUpSuite(c *check.C) { needBinaries(c) }

// transportTimeout is the --registry-timeout of the daemons here that meet
// a silent or stalling registry: long enough for a loaded CI machine to
// answer a real registry, short enough to keep each case to seconds.
const transportTimeout = 2 * time.Second

// The registry timeout is a daemon setting: --registry-timeout and
// "registry-timeout" in daemon.json both shorten the wait on a registry
// that accepts connections and never answers (30 s per try by default).
// The old environment variable is no longer read, and wharfd says so.
func (s *RegistryTransportSuite) TestRegistryTimeoutIsAFlagAndAConfigKey(c *check.C) {
	cfgFile := filepath.Join(c.MkDir(), "daemon.json")
	c.Assert(os.WriteFile(cfgFile, []byte(`{"registry-timeout":"`+transportTimeout.String()+`"}`), 0o600), check.IsNil)
	for _, args := range [][]string{
		{"--registry-timeout", transportTimeout.String()},
		{"--config-file", cfgFile},
	} {
		d := StartDaemon(c, args...)
		srv, err := hostile.Silent()
		c.Assert(err, check.IsNil)
		t0 := time.Now()
		r := d.remoteInspect(c, srv.Host+"/team/app:1", "")
		took := time.Since(t0)
		srv.Close()
		c.Check(r.Status >= 500, check.Equals, true, check.Commentf("%v: %s", args, r))
		c.Check(strings.Contains(r.Message(), srv.Host), check.Equals, true, check.Commentf("%v: %s", args, r.Message()))
		// At most 3 tries of one timeout plus backoff; the default would
		// take 90 s.
		c.Check(took < 5*transportTimeout, check.Equals, true, check.Commentf("%v: took %s", args, took))
		d.Stop(c)
	}

	d := startDaemonEnv(c, []string{"WHARF_REGISTRY_TIMEOUT=2s"})
	defer d.Stop(c)
	var info struct{ Warnings []string }
	d.Get(c, "/v1.50/info").JSON(c, &info)
	c.Check(strings.Join(info.Warnings, "\n"), check.Matches, `(?s).*WHARF_REGISTRY_TIMEOUT=2s is ignored.*--registry-timeout.*`)
	c.Check(d.Log(), check.Matches, `(?s).*level=warning msg="WHARF_REGISTRY_TIMEOUT=2s is ignored.*`)
}

// X-Registry-Auth is capped at 64 KiB (docs/architecture.md): a larger
// header is refused with a 400 that says why, on every route that takes
// credentials, before any registry is contacted.
func (s *RegistryTransportSuite) TestOversizedRegistryAuthHeaderIsRefused(c *check.C) {
	d := StartDaemon(c)
	defer d.Stop(c)
	reg, err := hostile.Start(hostile.Options{})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	huge := RegistryAuth("u", strings.Repeat("p", 64<<10), reg.Host)
	c.Assert(len(huge) > 64<<10, check.Equals, true)
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/v1.50/images/" + reg.Ref() + "/json?remote=1"},
		{http.MethodPost, "/v1.50/images/create?fromImage=" + reg.Name() + "&tag=" + reg.Tag},
		{http.MethodPost, "/v1.50/images/" + reg.Name() + "/push?tag=" + reg.Tag},
		{http.MethodGet, "/v1.50/distribution/" + reg.Ref() + "/json"},
	} {
		r := d.Req(c, req.method, req.path, nil, "X-Registry-Auth", huge)
		c.Check(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s %s: %s", req.method, req.path, r))
		c.Check(r.Message(), check.Matches, `X-Registry-Auth header is \d+ bytes, larger than the 65536 allowed`, check.Commentf("%s %s", req.method, req.path))
	}
	c.Check(len(reg.Seen()), check.Equals, 0, check.Commentf("the registry was contacted: %v", reg.Seen()))
	// A small header still works.
	small := base64.URLEncoding.EncodeToString([]byte(`{}`))
	r := d.Req(c, http.MethodGet, "/v1.50/images/"+reg.Ref()+"/json?remote=1", nil, "X-Registry-Auth", small)
	c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
}

package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/check.v1"

	wclient "github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// CheckRemoteWatchSuite is issue 24, part 3, against the real registry: a
// wharfd started with --check-remote-interval (1 s, the floor, for tests)
// reports each change of a local tag's state once, as an image event that
// the docker CLI reads (`docker events --filter type=image`), and in its
// gauges; nothing while nothing changes; and a SIGHUP changes the
// interval. Rounds are counted by wharf_check_remote_rounds_total: the
// test waits on rounds, never on time.
type CheckRemoteWatchSuite struct{ watchFixture }

func TestCheckRemoteWatchSuite(t *testing.T) { t.Parallel(); runSuite(t, &CheckRemoteWatchSuite{}) }

// CheckRemoteWatchEventsSuite and CheckRemoteWatchRestartSuite hold the
// two longest watch tests, each with a registry of its own: they wait on
// 1 s rounds, not on the CPU, so they run beside CheckRemoteWatchSuite.
type CheckRemoteWatchEventsSuite struct{ watchFixture }

func TestCheckRemoteWatchEventsSuite(t *testing.T) {
	t.Parallel()
	runSuite(t, &CheckRemoteWatchEventsSuite{})
}

type CheckRemoteWatchRestartSuite struct{ watchFixture }

func TestCheckRemoteWatchRestartSuite(t *testing.T) {
	t.Parallel()
	runSuite(t, &CheckRemoteWatchRestartSuite{})
}

// watchFixture is a watch suite's registry; each test starts its daemon.
type watchFixture struct {
	suiteFixture
	reg *testregistry.Registry
}

// watchWait bounds each wait for rounds (1 s ± 10 % each, plus the round)
// on a loaded CI box.
const watchWait = 90 * time.Second

func (s *watchFixture) SetUpSuite(c *check.C) {
	// The daemon keeps no credentials: the watch asks anonymously.
	s.reg = s.startRegistry(c, testregistry.Options{})
}

// watchMetrics is a daemon's /metrics URL, from its log (port 0).
func watchMetrics(c *check.C, d *Daemon) string {
	m := metricsListening.FindStringSubmatch(d.Log())
	c.Assert(m, check.NotNil, check.Commentf("no metrics address in the log:\n%s", d.Log()))
	return m[1]
}

func scrapeURL(c *check.C, url string) metricFamilies {
	resp, err := http.Get(url)
	c.Assert(err, check.IsNil)
	defer resp.Body.Close()
	c.Assert(resp.StatusCode, check.Equals, http.StatusOK)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	c.Assert(err, check.IsNil)
	return metricFamilies(fams)
}

// waitRounds waits until n more rounds of the watch have finished than
// when it was called, and returns the count then.
func waitRounds(c *check.C, url string, n int) float64 {
	start := scrapeURL(c, url).value(c, "wharf_check_remote_rounds_total", nil)
	var now float64
	ok := waitFor(watchWait, func() bool {
		now = scrapeURL(c, url).value(c, "wharf_check_remote_rounds_total", nil)
		return now >= start+float64(n)
	})
	c.Assert(ok, check.Equals, true, check.Commentf("rounds %v → %v, want +%d within %s", start, now, n, watchWait))
	return now
}

// watchEvent is a line of `docker events --format '{{json .}}'`.
type watchEvent struct {
	Type, Action string
	Actor        struct {
		ID         string
		Attributes map[string]string
	}
}

// imageEvents are the image events wharfd logged between since and now,
// read with the docker CLI.
func imageEvents(c *check.C, d *Daemon, since time.Time) []watchEvent {
	until := time.Now().Add(time.Second)
	res := d.Docker(c, "events", "--filter", "type=image",
		"--since", since.Format(time.RFC3339Nano), "--until", until.Format(time.RFC3339Nano), "--format", "{{json .}}")
	c.Assert(res.ExitCode, check.Equals, 0, check.Commentf("%s", res))
	var out []watchEvent
	for _, l := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if l == "" {
			continue
		}
		var e watchEvent
		c.Assert(json.Unmarshal([]byte(l), &e), check.IsNil, check.Commentf("%q", l))
		out = append(out, e)
	}
	return out
}

// byAction keeps the events of one action.
func byAction(evs []watchEvent, action string) []watchEvent {
	var out []watchEvent
	for _, e := range evs {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

func (s *CheckRemoteWatchEventsSuite) TestWatchReportsEachChangeOnce(c *check.C) {
	reg := s.reg
	d := s.startDaemon(c, "--check-remote-interval", "1s", "--metrics-addr", "127.0.0.1:0")
	url := watchMetrics(c, d)
	ctx, cancel := fixtureCtx()
	defer cancel()

	// What the daemon has: wa/app:latest, wa/ver:1.0, and wa/built:1
	// built on wa/base:1 (annotations).
	app1 := pushImage(c, reg, "wa/app", "latest", testregistry.ImageOptions{})
	pushImage(c, reg, "wa/ver", "1.0", testregistry.ImageOptions{})
	base1 := pushImage(c, reg, "wa/base", "1", testregistry.ImageOptions{})
	pushImage(c, reg, "wa/built", "1", testregistry.ImageOptions{Annotations: map[string]string{
		ocispec.AnnotationBaseImageName: reg.Host + "/wa/base:1", ocispec.AnnotationBaseImageDigest: base1.Manifest.Digest,
	}})
	// And wa/mp:1, an index (linux/amd64 and linux/arm64/v8), pulled for amd64.
	mpOld := pushIndex(c, reg, "wa/mp", "1", testregistry.IndexOptions{})
	for _, n := range []string{"wa/app:latest", "wa/ver:1.0", "wa/built:1", "wa/mp:1"} {
		name, tag, _ := strings.Cut(n, ":")
		r, lines := d.Pull(c, reg.Host+"/"+name, tag, "", "platform", "linux/amd64")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: %s", n, r))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", n))
	}
	t0 := time.Now()
	// Rounds that find everything current say nothing.
	waitRounds(c, url, 3)
	c.Assert(imageEvents(c, d, t0), check.HasLen, 0)

	// Everything moves at once: the tag, a higher version, the base; and
	// wa/mp:1's arm64 entry only, which is no alarm for an amd64 image.
	app2 := pushImage(c, reg, "wa/app", "latest", testregistry.ImageOptions{})
	c.Assert(reg.Client().PushIndex(ctx, "wa/mp", "1", indexWith(c, mpOld.Images[0], nil)), check.IsNil)
	pushImage(c, reg, "wa/ver", "1.1", testregistry.ImageOptions{})
	base2 := pushImage(c, reg, "wa/base", "1", testregistry.ImageOptions{})
	// +2: the round running at the push may have asked before it; then
	// several rounds in which nothing changes.
	waitRounds(c, url, 2+3)
	evs := imageEvents(c, d, t0)
	c.Assert(evs, check.HasLen, 3, check.Commentf("%+v", evs))
	out := byAction(evs, "outdated")
	c.Assert(out, check.HasLen, 1, check.Commentf("%+v", evs))
	a := out[0].Actor.Attributes
	c.Check(a["name"], check.Equals, reg.Host+"/wa/app:latest")
	c.Check(a["localDigest"], check.Equals, app1.Manifest.Digest)
	c.Check(a["remoteDigest"], check.Equals, app2.Manifest.Digest)
	c.Check(a["registry"], check.Equals, reg.Host)
	nv := byAction(evs, "newer-version")
	c.Assert(nv, check.HasLen, 1, check.Commentf("%+v", evs))
	c.Check(nv[0].Actor.Attributes["name"], check.Equals, reg.Host+"/wa/ver:1.0")
	c.Check(nv[0].Actor.Attributes["newerMinor"], check.Equals, "1.1")
	bo := byAction(evs, "base-outdated")
	c.Assert(bo, check.HasLen, 1, check.Commentf("%+v", evs))
	c.Check(bo[0].Actor.Attributes["name"], check.Equals, reg.Host+"/wa/built:1")
	c.Check(bo[0].Actor.Attributes["baseDigest"], check.Equals, base1.Manifest.Digest)
	c.Check(bo[0].Actor.Attributes["baseCurrentDigest"], check.Equals, base2.Manifest.Digest)

	// wa/mp:1 did move (the check says so), only not for amd64: no event.
	res := d.Wharf(c, "images", "--check-remote", "--format", "json", reg.Host+"/wa/mp")
	c.Assert(res.ExitCode, check.Equals, 0, check.Commentf("%s", res))
	var mp struct {
		RemoteStatus    string
		PlatformChanged *bool
	}
	c.Assert(json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &mp), check.IsNil, check.Commentf("%s", res.Stdout))
	c.Check(mp.RemoteStatus, check.Equals, "outdated")
	c.Check(mp.PlatformChanged != nil && !*mp.PlatformChanged, check.Equals, true, check.Commentf("%s", res.Stdout))

	// The gauges equal the counts.
	m := scrapeURL(c, url)
	c.Check(m.value(c, "wharf_images_outdated", map[string]string{"registry": reg.Host}), check.Equals, 1.0)
	c.Check(m.value(c, "wharf_images_newer_version", map[string]string{"registry": reg.Host}), check.Equals, 1.0)
	c.Check(m.value(c, "wharf_images_base_outdated", nil), check.Equals, 1.0)
	last := m.value(c, "wharf_check_remote_last_success_timestamp_seconds", map[string]string{"registry": reg.Host})
	c.Check(last >= float64(t0.Unix()), check.Equals, true, check.Commentf("last success %v, t0 %v", last, t0.Unix()))

	// The tag moves back: one current event (cleared: outdated), gauge 0.
	// t1 before the put: a round running then may see the tag move before
	// the put's answer is back here.
	t1 := time.Now()
	c.Assert(reg.Client().PutManifest(ctx, "wa/app", "latest", app1.Manifest), check.IsNil)
	waitRounds(c, url, 2+2)
	evs = imageEvents(c, d, t1)
	c.Assert(evs, check.HasLen, 1, check.Commentf("%+v", evs))
	c.Check(evs[0].Action, check.Equals, "current")
	c.Check(evs[0].Actor.Attributes["name"], check.Equals, reg.Host+"/wa/app:latest")
	c.Check(evs[0].Actor.Attributes["cleared"], check.Equals, "outdated")
	c.Check(scrapeURL(c, url).value(c, "wharf_images_outdated", map[string]string{"registry": reg.Host}), check.Equals, 0.0)

	// The filters of the docker CLI apply: event=outdated, image=name.
	res = d.Docker(c, "events", "--filter", "type=image", "--filter", "event=outdated", "--filter", "image="+reg.Host+"/wa/app",
		"--since", t0.Format(time.RFC3339Nano), "--until", time.Now().Format(time.RFC3339Nano))
	c.Assert(res.ExitCode, check.Equals, 0, check.Commentf("%s", res))
	c.Check(strings.Count(res.Stdout, "image outdated"), check.Equals, 1, check.Commentf("%s", res.Stdout))

	// The same through wharf's Go SDK: UpdateEventsFilter, ParseUpdateEvent.
	wc, err := wclient.New(d.Host)
	c.Assert(err, check.IsNil)
	unix := func(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }
	rc, err := wc.Events(ctx, wclient.EventsOptions{Since: unix(t0), Until: unix(time.Now()), Filters: wclient.UpdateEventsFilter()})
	c.Assert(err, check.IsNil)
	defer rc.Close()
	var got []string
	for m, err := range wclient.DecodeEvents(rc) {
		c.Assert(err, check.IsNil)
		e, ok := wclient.ParseUpdateEvent(m)
		c.Assert(ok, check.Equals, true, check.Commentf("%+v", m))
		got = append(got, e.Action+" "+strings.TrimPrefix(e.Name, reg.Host+"/")+" "+e.Cleared)
		if e.Action == wclient.EventOutdated {
			c.Check(e.RemoteDigest, check.Equals, app2.Manifest.Digest)
		}
	}
	sort.Strings(got)
	c.Check(got, check.DeepEquals, []string{"base-outdated wa/built:1 ", "current wa/app:latest outdated", "newer-version wa/ver:1.0 ", "outdated wa/app:latest "})
}

// TestWatchIntervalReloads: a SIGHUP applies a new check-remote-interval
// from daemon.json (seen in the log, the interval gauge and the rounds); an
// invalid one keeps the running one.
func (s *CheckRemoteWatchSuite) TestWatchIntervalReloads(c *check.C) {
	cfg := filepath.Join(c.MkDir(), "daemon.json")
	write := func(v string) {
		c.Assert(os.WriteFile(cfg, []byte(`{"check-remote-interval":"`+v+`"}`), 0o600), check.IsNil)
	}
	write("0s")
	d := s.startDaemon(c, "--config-file", cfg, "--metrics-addr", "127.0.0.1:0")
	url := watchMetrics(c, d)
	m := scrapeURL(c, url)
	c.Assert(m.value(c, "wharf_check_remote_interval_seconds", nil), check.Equals, 0.0)
	c.Assert(m.value(c, "wharf_check_remote_rounds_total", nil), check.Equals, 0.0)

	write("1s")
	hup(c, d, "configuration reloaded")
	c.Check(strings.Contains(d.Log(), "check-remote-interval: off → 1s"), check.Equals, true, check.Commentf("%s", logTail(d)))
	c.Assert(scrapeURL(c, url).value(c, "wharf_check_remote_interval_seconds", nil), check.Equals, 1.0)
	waitRounds(c, url, 2) // rounds run now

	write("10ms")
	hup(c, d, "reload failed")
	c.Assert(scrapeURL(c, url).value(c, "wharf_check_remote_interval_seconds", nil), check.Equals, 1.0)

	write("0s")
	hup(c, d, "check-remote-interval: 1s → off")
	c.Assert(scrapeURL(c, url).value(c, "wharf_check_remote_interval_seconds", nil), check.Equals, 0.0)
}

// TestInspectRemoteShowsBase: `wharf inspect --remote` shows the base an
// image names (issue 24): from its manifest's annotations, else its
// config's labels; nothing for an image that names none.
func (s *CheckRemoteWatchSuite) TestInspectRemoteShowsBase(c *check.C) {
	reg := s.reg
	d := s.startDaemon(c)
	base := pushImage(c, reg, "wi/base", "1", testregistry.ImageOptions{})
	kv := map[string]string{ocispec.AnnotationBaseImageName: reg.Host + "/wi/base:1", ocispec.AnnotationBaseImageDigest: base.Manifest.Digest}
	pushImage(c, reg, "wi/app", "ann", testregistry.ImageOptions{Annotations: kv})
	pushImage(c, reg, "wi/app", "lab", testregistry.ImageOptions{Labels: kv})
	pushImage(c, reg, "wi/app", "none", testregistry.ImageOptions{})
	for _, tc := range []struct{ tag, name, dgst, source string }{
		{"ann", reg.Host + "/wi/base:1", base.Manifest.Digest, "annotations"},
		{"lab", reg.Host + "/wi/base:1", base.Manifest.Digest, "labels"},
		{"none", "", "", ""},
	} {
		res := d.Wharf(c, "inspect", "--remote", reg.Host+"/wi/app:"+tc.tag)
		c.Assert(res.ExitCode, check.Equals, 0, check.Commentf("%s", res))
		var out []struct{ BaseName, BaseDigest, BaseSource string }
		c.Assert(json.Unmarshal([]byte(res.Stdout), &out), check.IsNil, check.Commentf("%s", res.Stdout))
		c.Assert(out, check.HasLen, 1)
		c.Check([]string{out[0].BaseName, out[0].BaseDigest, out[0].BaseSource}, check.DeepEquals, []string{tc.name, tc.dgst, tc.source}, check.Commentf("%s: %s", tc.tag, res.Stdout))
	}
}

// TestWatchSkipsBackedOffRegistry: a registry that answers 429 with
// Retry-After (a proxy plays Docker Hub's limit in front of the real
// registry) is asked by one round — which waits at the registry layer's
// gate instead of hammering — then skipped by the next rounds until the
// limit resets: no request reaches it and its last-success gauge stands
// still; once it answers again the watch resumes.
func (s *CheckRemoteWatchSuite) TestWatchSkipsBackedOffRegistry(c *check.C) {
	var (
		mu       sync.Mutex
		limiting bool
		limited  []time.Time // manifest requests answered 429
	)
	p, err := hostile.NewHookProxy(s.reg.URL, func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if !limiting || !strings.Contains(r.URL.Path, "/manifests/") {
			return false
		}
		limited = append(limited, time.Now())
		w.Header().Set("Retry-After", "8")
		hostile.WriteError(w, http.StatusTooManyRequests, "TOOMANYREQUESTS", "You have reached your pull rate limit.")
		return true
	}, nil)
	c.Assert(err, check.IsNil)
	s.closeAtEnd(p.Close)
	pushImage(c, s.reg, "wb/app", "latest", testregistry.ImageOptions{})
	d := s.startDaemon(c, "--check-remote-interval", "1s", "--metrics-addr", "127.0.0.1:0")
	url := watchMetrics(c, d)
	r, lines := d.Pull(c, p.Host+"/wb/app", "latest", "")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Assert(lines.Err(), check.Equals, "")
	waitRounds(c, url, 2)
	lastOK := func() float64 {
		return scrapeURL(c, url).value(c, "wharf_check_remote_last_success_timestamp_seconds", map[string]string{"registry": p.Host})
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(limited)
	}

	mu.Lock()
	limiting = true
	mu.Unlock()
	// The round that meets the limit ends once the registry layer has
	// given up (its gate honours Retry-After, capped at 10 s, through its
	// retries); +2: that round and one after it.
	c.Assert(waitFor(watchWait, func() bool { return count() > 0 }), check.Equals, true)
	waitRounds(c, url, 2)
	asked, last := count(), lastOK()
	c.Check(asked <= 3, check.Equals, true, check.Commentf("%d requests to a limited registry in one round: %v", asked, limited))
	// Three more rounds: the registry is skipped (its limit resets 8 s
	// after the last 429), nothing is asked, the gauge stands still.
	waitRounds(c, url, 3)
	c.Check(count(), check.Equals, asked, check.Commentf("requests while backed off: %v", limited))
	c.Check(lastOK(), check.Equals, last)
	c.Check(time.Since(limited[len(limited)-1]) < 8*time.Second, check.Equals, true, check.Commentf("the rounds above were not inside the back-off; the test proves nothing"))

	// The limit lifted: once it has reset, the watch asks again.
	mu.Lock()
	limiting = false
	mu.Unlock()
	c.Assert(waitFor(watchWait, func() bool { return lastOK() > last }), check.Equals, true, check.Commentf("%s", logTail(d)))
}

// lastWatchMetrics is the /metrics URL of the daemon's latest start (the
// log is appended to across restarts; port 0 picks another port each time).
func lastWatchMetrics(c *check.C, d *Daemon) string {
	all := metricsListening.FindAllStringSubmatch(d.Log(), -1)
	c.Assert(all, check.Not(check.HasLen), 0, check.Commentf("no metrics address in the log:\n%s", d.Log()))
	return all[len(all)-1][1]
}

// TestWatchStateSurvivesRestart: what the watch reported is kept across a
// restart (<data-root>/watch-state.json): the first rounds after it emit
// nothing for tags whose state has not changed — a consumer that notifies
// on events (as Diun does) is not notified again — and the gauges count
// them; a tag that moved while wharfd was stopped emits its one event.
func (s *CheckRemoteWatchRestartSuite) TestWatchStateSurvivesRestart(c *check.C) {
	reg := s.reg
	d := s.startDaemon(c, "--check-remote-interval", "1s", "--metrics-addr", "127.0.0.1:0")
	url := lastWatchMetrics(c, d)
	app1 := pushImage(c, reg, "wr/app", "latest", testregistry.ImageOptions{})
	pushImage(c, reg, "wr/ok", "latest", testregistry.ImageOptions{})
	pushImage(c, reg, "wr/ver", "1.0", testregistry.ImageOptions{})
	base1 := pushImage(c, reg, "wr/base", "1", testregistry.ImageOptions{})
	pushImage(c, reg, "wr/built", "1", testregistry.ImageOptions{Annotations: map[string]string{
		ocispec.AnnotationBaseImageName: reg.Host + "/wr/base:1", ocispec.AnnotationBaseImageDigest: base1.Manifest.Digest,
	}})
	for _, n := range []string{"wr/app:latest", "wr/ok:latest", "wr/ver:1.0", "wr/built:1"} {
		name, tag, _ := strings.Cut(n, ":")
		r, lines := d.Pull(c, reg.Host+"/"+name, tag, "")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: %s", n, r))
		c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s", n))
	}
	t0 := time.Now()
	app2 := pushImage(c, reg, "wr/app", "latest", testregistry.ImageOptions{})
	pushImage(c, reg, "wr/ver", "1.1", testregistry.ImageOptions{})
	pushImage(c, reg, "wr/base", "1", testregistry.ImageOptions{})
	waitRounds(c, url, 2+1)
	evs := imageEvents(c, d, t0)
	c.Assert(evs, check.HasLen, 3, check.Commentf("before the restart: %+v", evs))
	gauges := func(when string) {
		m := scrapeURL(c, url)
		c.Check(m.value(c, "wharf_images_outdated", map[string]string{"registry": reg.Host}), check.Equals, 1.0, check.Commentf("%s", when))
		c.Check(m.value(c, "wharf_images_newer_version", map[string]string{"registry": reg.Host}), check.Equals, 1.0, check.Commentf("%s", when))
		c.Check(m.value(c, "wharf_images_base_outdated", nil), check.Equals, 1.0, check.Commentf("%s", when))
	}
	gauges("before the restart")

	// A restart (an upgrade, a reboot): nothing changed, nothing to say.
	// The times are taken before each start: the first round may end
	// before Start returns (events are the new process's only anyway).
	t1 := time.Now()
	d.Restart(c)
	url = lastWatchMetrics(c, d)
	waitRounds(c, url, 2)
	evs = imageEvents(c, d, t1)
	c.Assert(evs, check.HasLen, 0, check.Commentf("after a restart that changed nothing: %+v", evs))
	gauges("after the restart")
	c.Check(strings.Count(d.Log(), "watch state loaded"), check.Equals, 1, check.Commentf("%s", logTail(d)))
	statePath := filepath.Join(d.Root, "watch-state.json")
	fi, err := os.Stat(statePath)
	c.Assert(err, check.IsNil)
	c.Check(fi.Mode().Perm(), check.Equals, os.FileMode(0o600))

	// The tag moves again while wharfd is stopped: one event after the
	// start, the new digest in it; the others stay silent.
	d.Stop(c)
	app3 := pushImage(c, reg, "wr/app", "latest", testregistry.ImageOptions{})
	t2 := time.Now()
	d.Start(c, d.Args...)
	url = lastWatchMetrics(c, d)
	waitRounds(c, url, 2)
	evs = imageEvents(c, d, t2)
	c.Assert(evs, check.HasLen, 1, check.Commentf("after a restart with one tag moved: %+v", evs))
	c.Check(evs[0].Action, check.Equals, "outdated")
	c.Check(evs[0].Actor.Attributes["name"], check.Equals, reg.Host+"/wr/app:latest")
	c.Check(evs[0].Actor.Attributes["localDigest"], check.Equals, app1.Manifest.Digest)
	c.Check(evs[0].Actor.Attributes["remoteDigest"], check.Equals, app3.Manifest.Digest)
	c.Check(app3.Manifest.Digest != app2.Manifest.Digest, check.Equals, true)
	gauges("after the second restart")

	// A file tampered with (the data-root is outside input) is a warning,
	// never a failed start: the watch starts from nothing and reports
	// the three alarms again.
	d.Stop(c)
	c.Assert(os.WriteFile(statePath, []byte(`{"version":1,"tags":{"not a tag":{}}}`), 0o600), check.IsNil)
	t3 := time.Now()
	d.Start(c, d.Args...)
	url = lastWatchMetrics(c, d)
	waitRounds(c, url, 2)
	c.Check(strings.Contains(d.Log(), "ignoring the watch's saved state"), check.Equals, true, check.Commentf("%s", logTail(d)))
	evs = imageEvents(c, d, t3)
	c.Check(evs, check.HasLen, 3, check.Commentf("after a corrupt file: %+v", evs))
	gauges("after a corrupt file")
}

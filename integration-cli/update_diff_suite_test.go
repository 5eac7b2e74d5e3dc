package integration

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/moby/client"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/api/types"
	wclient "github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// UpdateDiffSuite is the update check saying what changed, end to end: a
// tag moves to a version that differs from the pulled one in one package
// (a dpkg status entry's version) and one file; the watch's outdated event
// carries the summary, which a diun-style consumer (the Docker Go SDK
// reading GET /events) reads from the event alone; `wharf images
// --check-remote --newer --diff` shows it; and the pull then downloads the
// bytes it named, counted at the registry.
type UpdateDiffSuite struct {
	suiteFixture
	reg *testregistry.Registry
}

func TestUpdateDiffSuite(t *testing.T) { t.Parallel(); runSuite(t, &UpdateDiffSuite{}) }

func (s *UpdateDiffSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
}

// dpkgEntry is one package's paragraph of /var/lib/dpkg/status, as dpkg
// writes it.
func dpkgEntry(name, version, desc string) string {
	return fmt.Sprintf("Package: %s\nStatus: install ok installed\nPriority: optional\nSection: libs\nInstalled-Size: 120\n"+
		"Maintainer: wharf tests <tests@example.com>\nArchitecture: amd64\nVersion: %s\nDescription: %s\n a package of the update test\n", name, version, desc)
}

// appVersions are two versions of an image on one base: version 2 has
// libfoo 1.0-2 where version 1 has 1.0-1, and another /etc/app/version.
func appVersions(c *check.C) (v1, v2 *testregistry.Image) {
	status := func(libfoo string) string {
		return dpkgEntry("base-files", "12.4", "the base") + "\n" + dpkgEntry("libfoo", libfoo, "the library")
	}
	base := []contentsEntry{
		{typ: tar.TypeDir, name: "etc/", mode: 0o755},
		{typ: tar.TypeReg, name: "etc/os-release", mode: 0o644, body: "ID=debian\nVERSION_ID=\"12\"\nNAME=\"Debian GNU/Linux\"\n"},
		{typ: tar.TypeDir, name: "usr/", mode: 0o755},
		{typ: tar.TypeDir, name: "usr/lib/", mode: 0o755},
		{typ: tar.TypeReg, name: "usr/lib/libfoo.so.1", mode: 0o644, body: strings.Repeat("libfoo 1.0 ", 3000)},
		{typ: tar.TypeDir, name: "var/", mode: 0o755},
		{typ: tar.TypeDir, name: "var/lib/", mode: 0o755},
		{typ: tar.TypeDir, name: "var/lib/dpkg/", mode: 0o755},
		{typ: tar.TypeReg, name: "var/lib/dpkg/status", mode: 0o644, body: status("1.0-1")},
	}
	top := func(version string, extra ...contentsEntry) []contentsEntry {
		return append([]contentsEntry{
			{typ: tar.TypeDir, name: "etc/app/", mode: 0o755},
			{typ: tar.TypeReg, name: "etc/app/version", mode: 0o644, body: version + "\n"},
		}, extra...)
	}
	v1 = contentsImage(c, [][]contentsEntry{base, top("1.0.0")})
	v2 = contentsImage(c, [][]contentsEntry{base, top("1.0.1",
		contentsEntry{typ: tar.TypeReg, name: "var/lib/dpkg/status", mode: 0o644, body: status("1.0-2")})})
	c.Assert(v1.Layers[0].Digest, check.Equals, v2.Layers[0].Digest)
	return v1, v2
}

func (s *UpdateDiffSuite) TestOutdatedEventAndCheckSayWhatChanged(c *check.C) {
	d := s.startDaemon(c, "--check-remote-interval", "1s", "--metrics-addr", "127.0.0.1:0")
	url := watchMetrics(c, d)
	v1, v2 := appVersions(c)
	ctx, cancel := context.WithTimeout(context.Background(), watchWait)
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "ud/app", "1.0", v1), check.IsNil)
	name := s.reg.Host + "/ud/app:1.0"
	d.WharfOK(c, "pull", name)
	waitRounds(c, url, 1)

	// The consumer: the Docker SDK, following /events from now on.
	sdk, err := client.New(client.WithHost(d.Host))
	c.Assert(err, check.IsNil)
	defer sdk.Close()
	evs := sdk.Events(ctx, client.EventsListOptions{Filters: client.Filters{}.Add("type", "image").Add("event", "outdated")})

	c.Assert(s.reg.Client().PushImage(ctx, "ud/app", "1.0", v2), check.IsNil)
	var attrs map[string]string
	for attrs == nil {
		select {
		case m := <-evs.Messages:
			if m.Actor.Attributes["name"] == name {
				attrs = m.Actor.Attributes
			}
		case err := <-evs.Err:
			c.Fatalf("events: %v", err)
		case <-ctx.Done():
			c.Fatalf("no outdated event for %s within %s", name, watchWait)
		}
	}
	c.Logf("outdated event: %v", attrs)

	// Read from the event alone: the flat attributes…
	top, cfg := int64(len(v2.Layers[1].Data)), int64(len(v2.Config.Data))
	c.Check(attrs["packages.changed"], check.Equals, "libfoo 1.0-1→1.0-2")
	c.Check(attrs["packages.count"], check.Equals, "1")
	c.Check(attrs["pull.bytes"], check.Equals, strconv.FormatInt(top+cfg, 10))
	c.Check(attrs["pull.layers"], check.Equals, "1")
	c.Check(attrs["diff.to"], check.Equals, name)
	c.Check(attrs["diff.error"], check.Equals, "")
	// …and the summary as JSON.
	var sum types.DiffSummary
	c.Assert(json.Unmarshal([]byte(attrs["wharf.diff"]), &sum), check.IsNil, check.Commentf("%q", attrs["wharf.diff"]))
	c.Check(sum.PackagesChanged, check.DeepEquals, []types.PackageChange{{Name: "libfoo", Type: types.PackageTypeDeb, From: "1.0-1", To: "1.0-2"}})
	c.Check(sum.PackagesAdded, check.HasLen, 0)
	c.Check(sum.PackagesRemoved, check.HasLen, 0)
	c.Check(sum.PullBytes, check.Equals, top+cfg)
	c.Check(sum.FilesChanged >= 1, check.Equals, true, check.Commentf("%+v", sum))

	// The check on request says the same, reading nothing of the shared
	// base layer.
	s.reg.ResetCounters()
	r := d.WharfOK(c, "images", "--check-remote", "--newer", "--diff", "--format", "json", s.reg.Host+"/ud/app")
	bytes, gets := servedBlobBytes(c, s.reg, blobSizes(v1, v2))
	c.Logf("images --check-remote --newer --diff: %s; %d blob bytes in %d GETs", s.reg.Counter.Summary(), bytes, gets)
	for _, l := range s.reg.Counter.Requests() {
		c.Check(strings.Contains(l, v1.Layers[0].Digest), check.Equals, false, check.Commentf("the shared layer was read: %s", l))
	}
	var row struct {
		RemoteStatus string
		Diff         *types.DiffSummary
	}
	c.Assert(json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &row), check.IsNil, check.Commentf("%s", r.Stdout))
	c.Check(row.RemoteStatus, check.Equals, types.RemoteOutdated)
	c.Assert(row.Diff, check.NotNil, check.Commentf("%s", r.Stdout))
	c.Check(row.Diff.PackagesChanged, check.DeepEquals, sum.PackagesChanged)
	c.Check(row.Diff.PullBytes, check.Equals, top+cfg)
	c.Check(row.Diff.FilesChanged, check.Equals, sum.FilesChanged)
	r = d.WharfOK(c, "images", "--check-remote", "--newer", "--diff", s.reg.Host+"/ud/app")
	c.Logf("images --check-remote --newer --diff:\n%s", r.Stdout)
	c.Check(r.Stdout, check.Matches, `(?s)REPOSITORY.*CHANGES\n.*ud/app\s+1\.0 .*outdated\s+-\s+libfoo 1\.0-1→1\.0-2; \d+ files?; .* to pull\n`)

	// The pull downloads the layer the summary named; the config too,
	// unless the diffs' reads of it answer from the registry client's
	// content cache (then no request for it).
	s.reg.ResetCounters()
	d.WharfOK(c, "pull", name)
	served, _ := servedBlobBytes(c, s.reg, blobSizes(v1, v2))
	c.Logf("the pull: %s; %d blob bytes served", s.reg.Counter.Summary(), served)
	c.Check(served == top+cfg || served == top, check.Equals, true, check.Commentf("served %d, summary %d (layer %d, config %d)", served, sum.PullBytes, top, cfg))
}

// A higher version appears while the pulled tag stays put: the watch's
// newer-version event carries the summary against it, read here with
// wharf's Go SDK (ParseUpdateEvent).
func (s *UpdateDiffSuite) TestNewerVersionEventSaysWhatChanged(c *check.C) {
	d := s.startDaemon(c, "--check-remote-interval", "1s", "--metrics-addr", "127.0.0.1:0")
	url := watchMetrics(c, d)
	v1, v2 := appVersions(c)
	ctx, cancel := context.WithTimeout(context.Background(), watchWait)
	defer cancel()
	c.Assert(s.reg.Client().PushImage(ctx, "ud/ver", "2.0", v1), check.IsNil)
	d.WharfOK(c, "pull", s.reg.Host+"/ud/ver:2.0")
	waitRounds(c, url, 1)

	wc, err := wclient.New(d.Host)
	c.Assert(err, check.IsNil)
	rc, err := wc.Events(ctx, wclient.EventsOptions{Filters: wclient.UpdateEventsFilter()})
	c.Assert(err, check.IsNil)
	defer rc.Close()
	c.Assert(s.reg.Client().PushImage(ctx, "ud/ver", "2.1", v2), check.IsNil)
	var ev *wclient.UpdateEvent
	for m, err := range wclient.DecodeEvents(rc) {
		c.Assert(err, check.IsNil)
		if e, ok := wclient.ParseUpdateEvent(m); ok && e.Action == wclient.EventNewerVersion && e.Name == s.reg.Host+"/ud/ver:2.0" {
			ev = &e
			break
		}
	}
	c.Assert(ev, check.NotNil, check.Commentf("no newer-version event"))
	c.Check(ev.NewerMinor, check.Equals, "2.1")
	c.Assert(ev.Diff, check.NotNil)
	c.Check(ev.Diff.To, check.Equals, s.reg.Host+"/ud/ver:2.1")
	c.Check(ev.PackagesChanged, check.Equals, "libfoo 1.0-1→1.0-2")
	c.Check(ev.Diff.PackagesChanged, check.DeepEquals, []types.PackageChange{{Name: "libfoo", Type: types.PackageTypeDeb, From: "1.0-1", To: "1.0-2"}})
	c.Check(ev.Diff.PullBytes, check.Equals, int64(len(v2.Layers[1].Data)+len(v2.Config.Data)))
	c.Check(ev.Diff.Error, check.Equals, "")
}

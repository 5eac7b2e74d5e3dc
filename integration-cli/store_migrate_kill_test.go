package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"gopkg.in/check.v1"
)

// StoreMigrateKillSuite SIGKILLs wharfd in the middle of the migration of
// a version-1 data-root (wharf/images.json) to wharf/meta.db, at points it
// observes on disk, and checks that the next start finishes the migration
// with every image, and that the version-1 records stay untouched until
// the migration has committed (issue 22, "kill -9 at any point of the
// migration leaves a store that starts").
type StoreMigrateKillSuite struct {
	suiteFixture
}

func TestStoreMigrateKillSuite(t *testing.T) { t.Parallel(); runSuite(t, &StoreMigrateKillSuite{}) }

// migrateImages is the size of the version-1 store: large enough that the
// migration takes a time a poll loop can split, small enough for the
// integration run's 8-minute budget. On this 2-core machine, shared, 2,000
// images: meta.db.tmp appears after 40–260 ms, meta.db is renamed into
// place at 0.5–1.2 s (8.4 MB since importRecords writes in key order;
// 16.8 MB before), the test takes 25–36 s and hits all 7 kill points.
// The test logs the times. WHARF_MIGRATE_IMAGES changes the size.
const migrateImages = 2000

// v1Root writes a data-root as the previous format's wharfd leaves it,
// directly (as bench/local.go's prepareRootWith does): n images of one
// shared layer each with its own config and manifest, one tag and one
// repo digest each, in wharf/images.json version 1. It returns the
// images.json bytes and a few (name, image ID) pairs to look up.
func v1Root(c *check.C, root string, n int) ([]byte, [][2]string) {
	blobs := filepath.Join(root, "blobs", "sha256")
	c.Assert(os.MkdirAll(blobs, 0o700), check.IsNil)
	c.Assert(os.MkdirAll(filepath.Join(root, "wharf"), 0o700), check.IsNil)
	c.Assert(os.WriteFile(filepath.Join(root, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o600), check.IsNil)
	type desc struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int64  `json:"size"`
	}
	put := func(mt string, b []byte) desc {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		c.Assert(os.WriteFile(filepath.Join(blobs, h), b, 0o600), check.IsNil)
		return desc{mt, "sha256:" + h, int64(len(b))}
	}
	layer := put("application/vnd.oci.image.layer.v1.tar", makeTar(c, []tarEntry{{name: "hello", body: "hello"}}))
	created := "2025-03-14T15:09:26Z"
	type record struct {
		ID                    string
		Target, Manifest      desc
		RepoTags, RepoDigests []string
		LastTagTime, Created  string
	}
	recs := make([]record, 0, n)
	var lookups [][2]string
	for i := 0; i < n; i++ {
		cfg := fmt.Sprintf(`{"created":%q,"architecture":"amd64","os":"linux","config":{"Cmd":["/bin/sh"],"Labels":{"n":"%d"}},"rootfs":{"type":"layers","diff_ids":[%q]},"history":[{"created":%q,"created_by":"ADD hello /"}]}`,
			created, i, layer.Digest, created)
		cd := put("application/vnd.oci.image.config.v1+json", []byte(cfg))
		m, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cd, "layers": []desc{layer}})
		c.Assert(err, check.IsNil)
		md := put("application/vnd.oci.image.manifest.v1+json", m)
		name := fmt.Sprintf("127.0.0.1:5000/many/img-%d", i)
		recs = append(recs, record{ID: cd.Digest, Target: md, Manifest: md,
			RepoTags: []string{name + ":v1"}, RepoDigests: []string{name + "@" + md.Digest},
			LastTagTime: created, Created: created})
		if i == 0 || i == n/2 || i == n-1 {
			lookups = append(lookups, [2]string{name + ":v1", cd.Digest})
		}
	}
	b, err := json.Marshal(map[string]any{"version": 1, "images": recs})
	c.Assert(err, check.IsNil)
	c.Assert(os.WriteFile(filepath.Join(root, "wharf", "images.json"), b, 0o600), check.IsNil)
	return b, lookups
}

// startNoWait starts wharfd on d without waiting for its socket: the
// migration runs before the socket answers.
func startNoWait(c *check.C, d *Daemon) {
	logf, err := os.OpenFile(d.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	c.Assert(err, check.IsNil)
	defer logf.Close()
	cmd := exec.Command(bins.Wharfd, "-H", d.Host, "--data-root", d.Root, "-D")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "HOME="+d.Home, "XDG_CONFIG_HOME="+filepath.Join(d.Home, ".config"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c.Assert(cmd.Start(), check.IsNil)
	d.Args = nil
	d.cmd, d.done = cmd, make(chan struct{})
	go func(done chan struct{}) { d.waitErr = cmd.Wait(); close(done) }(d.done)
}

// migrationState is what the data-root's wharf/ shows of the migration.
type migrationState struct {
	tmp    int64 // size of meta.db.tmp, -1 when absent
	db     bool  // meta.db exists (the migration's commit point passed)
	v1Kept bool  // images.json.v1 exists
	stub   bool  // images.json is the version-2 stub
}

func observe(d *Daemon) migrationState {
	dir := filepath.Join(d.Root, "wharf")
	st := migrationState{tmp: -1}
	if fi, err := os.Stat(filepath.Join(dir, "meta.db.tmp")); err == nil {
		st.tmp = fi.Size()
	}
	st.db = fileExists(filepath.Join(dir, "meta.db"))
	st.v1Kept = fileExists(filepath.Join(dir, "images.json.v1"))
	if b, err := os.ReadFile(filepath.Join(dir, "images.json")); err == nil && len(b) < 4096 {
		var v struct{ Version int }
		st.stub = json.Unmarshal(b, &v) == nil && v.Version == 2
	}
	return st
}

func (st migrationState) String() string {
	return fmt.Sprintf("meta.db.tmp=%d meta.db=%v images.json.v1=%v stub=%v", st.tmp, st.db, st.v1Kept, st.stub)
}

// killPoint is a predicate on what the poll loop sees; the kill lands as
// soon as it holds (plus skip more polls, to spread the kills).
type killPoint struct {
	name string
	hit  func(migrationState) bool
	skip int
}

// killWhen polls d's data-root (no sleep: the event is the file) and
// SIGKILLs wharfd once p holds, or gives up when wharfd answers (the
// migration finished first). It returns the state seen at the kill.
func killWhen(c *check.C, d *Daemon, p killPoint) (migrationState, bool) {
	deadline := time.Now().Add(daemonReadyTimeout)
	skipped := -1
	for polls := 0; ; polls++ {
		st := observe(d)
		if skipped >= 0 || p.hit(st) {
			skipped++
			if skipped >= p.skip {
				d.Kill()
				return observe(d), true
			}
		}
		if isClosed(d.done) {
			c.Fatalf("wharfd exited during the migration: %v\n%s", d.waitErr, d.Log())
		}
		if st.stub && st.db && polls%64 == 0 {
			// Past the last step: whatever the point was, it is gone.
			if r, err := d.HTTPClient().Get("http://wharfd/_ping"); err == nil {
				r.Body.Close()
				return st, false
			}
		}
		if time.Now().After(deadline) {
			c.Fatalf("migration not finished within %s (%s)\n%s", daemonReadyTimeout, st, d.Log())
		}
		runtime.Gosched()
	}
}

// copyTree copies the prepared data-root (cp -a: modes kept, no links
// shared, so the store's changes never reach the template).
func copyTree(c *check.C, from, to string) {
	out, err := exec.Command("cp", "-a", from, to).CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("%s", out))
}

// TestKill9DuringMigration kills wharfd at each observable point of the
// migration of a version-1 store, then starts it again and checks that the
// migration completes with every image, and that until the commit point
// (meta.db renamed into place) images.json is the version-1 file byte for
// byte; after it, images.json.v1 is, once it exists.
func (s *StoreMigrateKillSuite) TestKill9DuringMigration(c *check.C) {
	needBinaries(c)
	n := migrateImages
	if v, err := strconv.Atoi(os.Getenv("WHARF_MIGRATE_IMAGES")); err == nil && v > 0 {
		n = v
	}
	seed := time.Now().UnixNano()
	if v, err := strconv.ParseInt(os.Getenv("WHARF_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	rng := rand.New(rand.NewSource(seed))
	c.Logf("%d images, seed %d (replay with WHARF_CRASH_SEED=%d)", n, seed, seed)

	template := filepath.Join(c.MkDir(), "v1")
	t0 := time.Now()
	v1, lookups := v1Root(c, template, n)
	c.Logf("version-1 data-root of %d images prepared in %s (images.json %d bytes)", n, time.Since(t0).Round(time.Millisecond), len(v1))

	// A migration without a kill first: how long it takes and how large
	// meta.db gets, for the kill points and the log.
	d := NewDaemon(c)
	s.killAtEnd(d)
	copyTree(c, template, d.Root)
	t0 = time.Now()
	var firstTmp, committed, stubbed time.Duration
	startNoWait(c, d)
	for {
		st := observe(d)
		el := time.Since(t0)
		if firstTmp == 0 && st.tmp >= 0 {
			firstTmp = el
		}
		if committed == 0 && st.db {
			committed = el
		}
		if st.stub && st.db {
			stubbed = el
			break
		}
		c.Assert(isClosed(d.done), check.Equals, false, check.Commentf("%s", d.Log()))
		c.Assert(el < daemonReadyTimeout, check.Equals, true, check.Commentf("migration not done in %s: %s", el, st))
		runtime.Gosched()
	}
	c.Assert(d.waitReady(), check.IsNil)
	ready := time.Since(t0)
	fi, err := os.Stat(filepath.Join(d.Root, "wharf", "meta.db"))
	c.Assert(err, check.IsNil)
	dbSize := fi.Size()
	c.Logf("uninterrupted migration: meta.db.tmp seen at %s, meta.db (commit) at %s, stub at %s, socket at %s; meta.db %d bytes",
		firstTmp.Round(time.Millisecond), committed.Round(time.Millisecond), stubbed.Round(time.Millisecond), ready.Round(time.Millisecond), dbSize)
	s.checkMigrated(c, d, v1, lookups, n, "uninterrupted")
	d.Stop(c)

	// bbolt grows meta.db.tmp to its final size in one truncate at the
	// commit and then writes the pages into it, so its size shows three
	// moments only: created (4 pages), grown (pages being written, then
	// fsync), gone (renamed). The "then k polls" points spread kills
	// across the writing (k from the seed).
	tmpGrown := func(st migrationState) bool { return st.tmp > 64<<10 }
	points := []killPoint{
		{name: "meta.db.tmp created", hit: func(st migrationState) bool { return st.tmp >= 0 }},
		{name: "meta.db.tmp created, then some polls", hit: func(st migrationState) bool { return st.tmp >= 0 }, skip: 1 + rng.Intn(200)},
		{name: "meta.db.tmp grown (pages being written)", hit: tmpGrown},
		{name: "meta.db.tmp grown, then some polls", hit: tmpGrown, skip: 1 + rng.Intn(50)},
		{name: "meta.db renamed into place (commit point)", hit: func(st migrationState) bool { return st.db }},
		{name: "images.json.v1 kept", hit: func(st migrationState) bool { return st.v1Kept }},
		{name: "stub written", hit: func(st migrationState) bool { return st.stub }},
	}
	hits := 0
	for round, p := range points {
		d := NewDaemon(c)
		s.killAtEnd(d)
		copyTree(c, template, d.Root)
		what := fmt.Sprintf("round %d (%s)", round, p.name)
		startNoWait(c, d)
		st, killed := killWhen(c, d, p)
		c.Logf("%s: killed=%v at %s", what, killed, st)
		if !killed {
			d.Kill()
		} else {
			hits++
		}
		s.checkOldFilesKept(c, d, v1, what)
		// The next start finishes (or redoes) the migration.
		d.Start(c)
		s.checkMigrated(c, d, v1, lookups, n, what)
		d.Stop(c)
	}
	c.Logf("%d of %d kill points hit before the migration finished", hits, len(points))
	c.Assert(hits >= len(points)/2, check.Equals, true, check.Commentf("the migration was too fast for most kill points: %d of %d hit", hits, len(points)))
}

// checkOldFilesKept: with wharfd dead, the version-1 records are where a
// start-up (of this wharf, or, before the commit point, of the previous
// one) finds them, unchanged.
func (s *StoreMigrateKillSuite) checkOldFilesKept(c *check.C, d *Daemon, v1 []byte, what string) {
	dir := filepath.Join(d.Root, "wharf")
	st := observe(d)
	cur, _ := os.ReadFile(filepath.Join(dir, "images.json"))
	if !st.db {
		c.Assert(bytes.Equal(cur, v1), check.Equals, true, check.Commentf("%s: before the commit point images.json must be the version-1 file (%s)", what, st))
		c.Assert(st.v1Kept, check.Equals, false, check.Commentf("%s", what))
		return
	}
	if !st.v1Kept {
		c.Assert(bytes.Equal(cur, v1), check.Equals, true, check.Commentf("%s: images.json renamed away before images.json.v1 exists (%s)", what, st))
		return
	}
	kept, err := os.ReadFile(filepath.Join(dir, "images.json.v1"))
	c.Assert(err, check.IsNil)
	c.Assert(bytes.Equal(kept, v1), check.Equals, true, check.Commentf("%s: images.json.v1 differs from the version-1 file", what))
}

// checkMigrated: a running wharfd on a migrated root has every image, the
// version-1 file kept as images.json.v1, the stub, and a clean store.
func (s *StoreMigrateKillSuite) checkMigrated(c *check.C, d *Daemon, v1 []byte, lookups [][2]string, n int, what string) {
	st := observe(d)
	c.Assert(st.db && st.v1Kept && st.stub && st.tmp < 0, check.Equals, true, check.Commentf("%s: after a start: %s", what, st))
	kept, err := os.ReadFile(filepath.Join(d.Root, "wharf", "images.json.v1"))
	c.Assert(err, check.IsNil)
	c.Assert(bytes.Equal(kept, v1), check.Equals, true, check.Commentf("%s: images.json.v1", what))
	var info struct{ Images int }
	d.Get(c, "/v1.50/info").JSON(c, &info)
	c.Assert(info.Images, check.Equals, n, check.Commentf("%s: images after the migration\n%s", what, logTail(d)))
	var list []struct{ Id string }
	d.Get(c, "/v1.50/images/json").JSON(c, &list)
	c.Assert(list, check.HasLen, n, check.Commentf("%s", what))
	for _, l := range lookups {
		r := d.Get(c, "/v1.50/images/"+l[0]+"/json")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: inspect %s: %s", what, l[0], r))
		var ins struct{ Id string }
		r.JSON(c, &ins)
		c.Assert(ins.Id, check.Equals, l[1], check.Commentf("%s: %s", what, l[0]))
	}
	rep, code := systemCheck(c, d, "--quick")
	c.Assert(code, check.Equals, 0, check.Commentf("%s: system check:\n%s", what, rep))
	c.Assert(rep.Images, check.Equals, n)
}

package integration

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// StoreDurabilitySuite: what a failed or interrupted write leaves in the
// store (issue 9, findings 2, 3 and 7): a tag, rmi, pull or load that fails
// on a full disk changes nothing, in memory or after a restart; no blob
// outlives the images that use it (failed pull, kill -9 during a load, a
// crash between rmi's record write and its garbage collection); and the
// data-root is private to its owner (0700/0600), also when an older store
// had looser modes.
type StoreDurabilitySuite struct {
	suiteFixture
	reg *testregistry.Registry
}

func TestStoreDurabilitySuite(t *testing.T) { t.Parallel(); runSuite(t, &StoreDurabilitySuite{}) }

func (s *StoreDurabilitySuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
}

// Bounds of the polls below: how long a condition that should hold at once
// (garbage collection after a failed operation or at start-up, a staged blob
// of a streaming load showing up) may take on a loaded 2-core CI machine.
const (
	gcTimeout    = 5 * time.Second
	stageTimeout = 20 * time.Second
)

// ---- what the store holds, computed independently of the store check ----

// TestDiskFullTagRmiPullLoadChangeNothing: on a full data-root, tag, rmi,
// pull and load fail and change nothing — not the image list, not inspect,
// not the records a later successful write persists — and leave no blob
// behind once the space is back.
func (s *StoreDurabilitySuite) TestDiskFullTagRmiPullLoadChangeNothing(c *check.C) {
	mnt, umount := mountTmpfs(c, 8<<20)
	defer umount()
	d := NewDaemon(c)
	d.Root = filepath.Join(mnt, "root")
	d.Start(c)
	defer d.Kill()

	reg := s.reg
	opts := testregistry.ImageOptions{Layers: 2, LayerSize: 48 << 10}
	pushImage(c, reg, "dur/full-a", "v1", opts)
	imgB := pushImage(c, reg, "dur/full-b", "v1", testregistry.ImageOptions{Layers: 3, LayerSize: 48 << 10})
	imgC := pushImage(c, reg, "dur/full-c", "v1", opts)
	nameA, nameB, nameC := reg.Host+"/dur/full-a", reg.Host+"/dur/full-b", reg.Host+"/dur/full-c"

	// The store before the disk fills: A (two tags), an imported image, and
	// C's archive made (C pulled, saved and removed again).
	_, lines := d.Pull(c, nameA, "v1", "")
	c.Assert(lines.Err(), check.Equals, "")
	idA := d.Inspect(c, nameA+":v1")["Id"].(string)
	c.Assert(d.Req(c, http.MethodPost, "/v1.50/images/"+nameA+":v1/tag?repo=local/victim&tag=1", nil).Status, check.Equals, http.StatusCreated)
	idOther := d.Import(c, "local/other:1")
	archiveC := saveArchive(c, d, nameC, "v1")
	before := imageState(c, d)
	c.Assert(before, check.HasLen, 3, check.Commentf("%v", before))
	c.Assert(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("the store before the disk fills"))

	// Disk full: no block left.
	bsize := fillTo(c, mnt, 0)

	r := d.Req(c, http.MethodPost, "/v1.50/images/"+nameA+":v1/tag?repo=local/failed&tag=tag", nil)
	c.Check(r.Status >= 400, check.Equals, true, check.Commentf("tag on a full disk answered %s", r))
	now := imageState(c, d)
	c.Check(lists(now, "local/failed:tag"), check.Equals, false, check.Commentf("failed tag listed by GET /images/json: %v", now))
	c.Check(inspectStatus(c, d, "local/failed:tag"), check.Equals, http.StatusNotFound, check.Commentf("failed tag inspects"))

	r = d.Req(c, http.MethodDelete, "/v1.50/images/local/victim:1", nil)
	c.Check(r.Status >= 400, check.Equals, true, check.Commentf("rmi (untag) on a full disk answered %s", r))
	now = imageState(c, d)
	c.Check(lists(now, "local/victim:1"), check.Equals, true, check.Commentf("tag hidden by a failed rmi: %v", now))
	c.Check(inspectStatus(c, d, "local/victim:1"), check.Equals, http.StatusOK, check.Commentf("tag hidden by a failed rmi"))

	r = d.Req(c, http.MethodDelete, "/v1.50/images/"+idOther+"?force=1", nil)
	c.Check(r.Status >= 400, check.Equals, true, check.Commentf("rmi -f (delete) on a full disk answered %s", r))
	now = imageState(c, d)
	c.Check(lists(now, "local/other:1"), check.Equals, true, check.Commentf("image hidden by a failed rmi -f: %v", now))
	c.Check(inspectStatus(c, d, idOther), check.Equals, http.StatusOK, check.Commentf("image hidden by a failed rmi -f"))

	// Pull of B: room for exactly its layers, none for its config: the pull
	// stores blobs, then fails.
	var layerSizes []int64
	for _, l := range imgB.Layers {
		layerSizes = append(layerSizes, int64(len(l.Data)))
	}
	fillTo(c, mnt, blocks(bsize, layerSizes...))
	_, lines = d.Pull(c, nameB, "v1", "")
	c.Check(lines.Err(), check.Not(check.Equals), "", check.Commentf("pull on a full disk succeeded: %v", lines.Texts()))
	now = imageState(c, d)
	c.Check(listsID(now, imgB.ID()) || lists(now, nameB+":v1"), check.Equals, false, check.Commentf("failed pull left a record: %v", now))
	c.Check(inspectStatus(c, d, nameB+":v1"), check.Equals, http.StatusNotFound, check.Commentf("failed pull inspects"))

	// Load of C: room for exactly its blobs, none for the records.
	fillTo(c, mnt, blocks(bsize, archiveBlobSizes(c, archiveC)...))
	msg := loadArchive(c, d, archiveC)
	c.Check(msg, check.Not(check.Equals), "", check.Commentf("load on a full disk succeeded"))
	now = imageState(c, d)
	c.Check(listsID(now, imgC.ID()) || lists(now, nameC+":v1"), check.Equals, false, check.Commentf("failed load (%s) left a record: %v", msg, now))
	c.Check(inspectStatus(c, d, imgC.ID()), check.Equals, http.StatusNotFound, check.Commentf("failed load inspects"))

	// Space back: nothing changed, no blob of the failed pull or load stays.
	unfill(c, mnt)
	c.Check(imageState(c, d), check.DeepEquals, before, check.Commentf("image list after the failed writes"))
	c.Check(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("after the failed pull and load, space freed"))

	// One successful write, then a restart: only it is on disk.
	r = d.Req(c, http.MethodPost, "/v1.50/images/"+idA+"/tag?repo=local/after&tag=ok", nil)
	c.Check(r.Status, check.Equals, http.StatusCreated, check.Commentf("tag with space: %s", r))
	d.Restart(c)
	want := append(append([]string{}, before...), idA+" local/after:ok")
	sort.Strings(want)
	c.Check(imageState(c, d), check.DeepEquals, want, check.Commentf("after a successful tag and a restart: only that tag may have been added"))
	c.Check(inspectStatus(c, d, "local/failed:tag"), check.Equals, http.StatusNotFound, check.Commentf("failed tag after restart"))
	c.Check(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("after the restart"))
}

// TestKill9DuringLoadLeavesNoOrphans: a load streamed through a pipe has
// staged its blobs (all but the archive's index.json and manifest.json are
// sent) when wharfd is SIGKILLed; after the restart none of those blobs is
// left and the check counts no unreferenced blob.
func (s *StoreDurabilitySuite) TestKill9DuringLoadLeavesNoOrphans(c *check.C) {
	reg := s.reg
	pushImage(c, reg, "dur/kill-base", "v1", testregistry.ImageOptions{Layers: 2, LayerSize: 32 << 10})
	pushImage(c, reg, "dur/kill-load", "v1", testregistry.ImageOptions{Layers: 3, LayerSize: 128 << 10})
	d := StartDaemon(c)
	defer d.Kill()
	_, lines := d.Pull(c, reg.Host+"/dur/kill-base", "v1", "")
	c.Assert(lines.Err(), check.Equals, "")
	archive := saveArchive(c, d, reg.Host+"/dur/kill-load", "v1")
	c.Assert(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("before the load"))
	before := imageState(c, d)

	// Stream every entry but the metadata that would let the load finish.
	type entry struct {
		hdr  *tar.Header
		body []byte
	}
	var send []entry
	var staged []string
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		c.Assert(err, check.IsNil)
		body, err := io.ReadAll(tr)
		c.Assert(err, check.IsNil)
		if h.Name == "index.json" || h.Name == "manifest.json" {
			continue
		}
		send = append(send, entry{h, body})
		if h.Typeflag == tar.TypeReg && strings.HasPrefix(h.Name, "blobs/sha256/") {
			staged = append(staged, strings.TrimPrefix(h.Name, "blobs/sha256/"))
		}
	}
	c.Assert(len(staged) >= 4, check.Equals, true, check.Commentf("archive blobs: %v", staged))

	pr, pw := io.Pipe()
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		req, _ := http.NewRequest(http.MethodPost, "http://wharfd/v1.50/images/load", pr)
		req.Header.Set("Content-Type", "application/x-tar")
		if resp, err := d.HTTPClient().Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		pr.Close()
	}()
	tw := tar.NewWriter(pw)
	for _, e := range send {
		c.Assert(tw.WriteHeader(e.hdr), check.IsNil)
		_, err := tw.Write(e.body)
		c.Assert(err, check.IsNil)
	}
	c.Assert(tw.Flush(), check.IsNil) // no Close: the archive is not over

	blobDir := filepath.Join(d.Root, "blobs", "sha256")
	allStaged := func() bool {
		for _, h := range staged {
			if !fileExists(filepath.Join(blobDir, h)) {
				return false
			}
		}
		return true
	}
	c.Assert(waitFor(stageTimeout, allStaged), check.Equals, true,
		check.Commentf("the load did not stage its blobs %v within %s\n%s", staged, stageTimeout, d.Log()))
	d.Kill()
	pw.CloseWithError(errors.New("wharfd killed"))
	<-loadDone

	d.Start(c, d.Args...)
	c.Check(imageState(c, d), check.DeepEquals, before, check.Commentf("the interrupted load recorded something"))
	c.Check(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("after kill -9 during a load with its blobs staged, and a restart"))
	rep := storeCheck(c, d)
	c.Check(rep.Problems, check.HasLen, 0, check.Commentf("%+v", rep.Problems))
}

// TestStartupReclaimsBlobsOfRemovedImage: the state a crash between rmi's
// record write and its garbage collection leaves — the removed image's blobs
// (and any other content-addressed blob nobody uses) still under blobs/ —
// is cleaned up by the next start: the files are gone, the image still
// recorded keeps every blob, the check is clean.
func (s *StoreDurabilitySuite) TestStartupReclaimsBlobsOfRemovedImage(c *check.C) {
	reg := s.reg
	pushImage(c, reg, "dur/gc-keep", "v1", testregistry.ImageOptions{Layers: 2, LayerSize: 32 << 10})
	d := StartDaemon(c)
	defer d.Kill()
	name := reg.Host + "/dur/gc-keep"
	_, lines := d.Pull(c, name, "v1", "")
	c.Assert(lines.Err(), check.Equals, "")
	before := imageState(c, d)
	d.Stop(c)

	// The blobs of an image whose record is already gone: manifest, config,
	// layers; and a stray blob (random content, correctly named).
	gone, err := testregistry.NewImage(testregistry.ImageOptions{Layers: 2, LayerSize: 64 << 10})
	c.Assert(err, check.IsNil)
	stray := make([]byte, 10000)
	_, err = rand.Read(stray)
	c.Assert(err, check.IsNil)
	contents := [][]byte{gone.Manifest.Data, gone.Config.Data, stray}
	for _, l := range gone.Layers {
		contents = append(contents, l.Data)
	}
	var planted []string
	var plantedBytes int
	for _, b := range contents {
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		c.Assert(os.WriteFile(filepath.Join(d.Root, "blobs", "sha256", h), b, 0o600), check.IsNil)
		planted = append(planted, h)
		plantedBytes += len(b)
	}

	d.Start(c, d.Args...)
	var left []string
	waitFor(gcTimeout, func() bool {
		left = left[:0]
		for _, h := range planted {
			if fileExists(filepath.Join(d.Root, "blobs", "sha256", h)) {
				left = append(left, h)
			}
		}
		return len(left) == 0
	})
	c.Check(left, check.HasLen, 0, check.Commentf("%d of %d unreferenced blobs (%d bytes) survived the start-up", len(left), len(planted), plantedBytes))
	c.Check(imageState(c, d), check.DeepEquals, before)
	c.Check(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("after the start-up"))
	rep := storeCheck(c, d)
	c.Check(rep.Problems, check.HasLen, 0, check.Commentf("%+v", rep.Problems))
	c.Check(rep.Images, check.Equals, 1)
}

// holdProxy forwards to a registry but holds the first GET of one blob
// until released: the test decides what happens while a layer is pending.
type holdProxy struct {
	Host    string
	arrived chan struct{} // closed when the held request came in
	release chan struct{} // close to let it (and later ones) through
	srv     *httptest.Server
}

func newHoldProxy(c *check.C, target, digest string) *holdProxy {
	u, err := url.Parse(target)
	c.Assert(err, check.IsNil)
	p := &holdProxy{arrived: make(chan struct{}), release: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	var once sync.Once
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+digest) {
			once.Do(func() { close(p.arrived) })
			select {
			case <-p.release:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	p.Host = strings.TrimPrefix(p.srv.URL, "http://")
	return p
}

func (p *holdProxy) Close() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// pullError pulls name:tag through the API without check (for goroutines)
// and returns the error the client sees, "" on success.
func pullError(d *Daemon, name, tag string) string {
	q := url.Values{"fromImage": {name}, "tag": {tag}}
	resp, err := d.HTTPClient().Post("http://wharfd/v1.50/images/create?"+q.Encode(), "", nil)
	if err != nil {
		return "transport: " + err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("status %d: %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m struct{ Error string }
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Error != "" {
			return m.Error
		}
	}
	if err := sc.Err(); err != nil {
		return "read: " + err.Error()
	}
	return ""
}

// TestFailedPullLeavesNoOrphans: the registry dies while one layer of a pull
// is pending and the others are stored; the pull fails, and the layers it
// stored are reclaimed at once (and are not there after a restart either).
func (s *StoreDurabilitySuite) TestFailedPullLeavesNoOrphans(c *check.C) {
	// A registry of its own: this test kills it.
	reg, err := testregistry.Start(testregistry.Options{})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	pushImage(c, s.reg, "dur/pull-base", "v1", testregistry.ImageOptions{Layers: 1, LayerSize: 16 << 10})
	img := pushImage(c, reg, "dur/pull-dies", "v1", testregistry.ImageOptions{Layers: 3, LayerSize: 64 << 10})
	held := img.Layers[2].Digest
	proxy := newHoldProxy(c, reg.DirectURL, held)
	defer proxy.Close()

	d := StartDaemon(c)
	defer d.Kill()
	_, lines := d.Pull(c, s.reg.Host+"/dur/pull-base", "v1", "")
	c.Assert(lines.Err(), check.Equals, "")
	before := imageState(c, d)

	name := proxy.Host + "/dur/pull-dies"
	result := make(chan string, 1)
	go func() { result <- pullError(d, name, "v1") }()
	select {
	case <-proxy.arrived:
	case <-time.After(stageTimeout):
		c.Fatalf("the pull never asked for layer %s\n%s", held, d.Log())
	}
	// The other two layers are stored while the third one waits.
	blobDir := filepath.Join(d.Root, "blobs", "sha256")
	stored := func() bool {
		for _, l := range img.Layers[:2] {
			if !fileExists(filepath.Join(blobDir, strings.TrimPrefix(l.Digest, "sha256:"))) {
				return false
			}
		}
		return true
	}
	c.Assert(waitFor(stageTimeout, stored), check.Equals, true, check.Commentf("layers 1 and 2 not stored\n%s", d.Log()))
	reg.Stop()
	close(proxy.release)
	var msg string
	select {
	case msg = <-result:
	case <-time.After(2 * time.Minute):
		c.Fatalf("the pull did not end after the registry died")
	}
	c.Assert(msg, check.Not(check.Equals), "", check.Commentf("the pull succeeded with its registry dead"))
	c.Logf("pull error: %s", msg)

	c.Check(imageState(c, d), check.DeepEquals, before, check.Commentf("the failed pull recorded something"))
	c.Check(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("right after the failed pull (%s)", msg))
	d.Restart(c)
	c.Check(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("after the failed pull and a restart"))
}

// looseModes lists every path under root whose mode lets group or others
// in (and root itself unless it is exactly 0700).
func looseModes(c *check.C, root string) []string {
	var bad []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil
		}
		perm := fi.Mode().Perm()
		switch {
		case p == root && perm != 0o700:
			bad = append(bad, fmt.Sprintf("%s (data-root) %#o, want 0700", p, perm))
		case p != root && perm&0o077 != 0:
			want := "0600"
			if fi.IsDir() {
				want = "0700"
			}
			bad = append(bad, fmt.Sprintf("%s %#o, want %s", p, perm, want))
		}
		return nil
	})
	c.Assert(err, check.IsNil)
	return bad
}

// readableByNobody tries `cat path` as uid/gid 65534.
func readableByNobody(path string) bool {
	cmd := exec.Command("cat", path)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	return cmd.Run() == nil
}

// nobodyReads lists the regular files under root that user nobody can read.
func nobodyReads(c *check.C, root string) []string {
	var files []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	c.Assert(err, check.IsNil)
	c.Assert(files, check.Not(check.HasLen), 0)
	var out []string
	for _, f := range files {
		if readableByNobody(f) {
			out = append(out, f)
		}
	}
	return out
}

// TestDataRootIsPrivate: after a pull and a load the data-root is 0700,
// every directory under it 0700 and every file 0600, and user nobody reads
// none of them; a store whose modes were loosened (0755/0644) is tightened
// at the next start.
func (s *StoreDurabilitySuite) TestDataRootIsPrivate(c *check.C) {
	// The data-root's parents are open to everyone, so that only its own
	// modes keep nobody out (c.MkDir is 0700).
	base, err := os.MkdirTemp("/tmp", "wharf-modes-")
	c.Assert(err, check.IsNil)
	defer os.RemoveAll(base)
	c.Assert(os.Chmod(base, 0o755), check.IsNil)
	control := filepath.Join(base, "control")
	c.Assert(os.WriteFile(control, []byte("x"), 0o644), check.IsNil)
	c.Assert(readableByNobody(control), check.Equals, true, check.Commentf("cat as nobody cannot read a 0644 file in %s: the check below would prove nothing", base))

	reg := s.reg
	pushImage(c, reg, "dur/modes-pull", "v1", testregistry.ImageOptions{Layers: 2, LayerSize: 16 << 10})
	pushImage(c, reg, "dur/modes-load", "v1", testregistry.ImageOptions{Layers: 2, LayerSize: 16 << 10})
	d := NewDaemon(c)
	d.Root = filepath.Join(base, "root")
	d.Start(c)
	defer d.Kill()
	_, lines := d.Pull(c, reg.Host+"/dur/modes-pull", "v1", "")
	c.Assert(lines.Err(), check.Equals, "")
	archive := saveArchive(c, d, reg.Host+"/dur/modes-load", "v1")
	c.Assert(loadArchive(c, d, archive), check.Equals, "")
	c.Assert(imageState(c, d), check.HasLen, 2)

	c.Check(looseModes(c, d.Root), check.HasLen, 0, check.Commentf("modes after a pull and a load:\n%s", strings.Join(looseModes(c, d.Root), "\n")))
	readable := nobodyReads(c, d.Root)
	c.Check(readable, check.HasLen, 0, check.Commentf("user nobody reads:\n%s", strings.Join(readable, "\n")))

	// An older store with loose modes is tightened at start-up.
	d.Stop(c)
	err = filepath.WalkDir(d.Root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.Chmod(p, 0o755)
		case e.Type().IsRegular():
			return os.Chmod(p, 0o644)
		}
		return nil
	})
	c.Assert(err, check.IsNil)
	c.Assert(looseModes(c, d.Root), check.Not(check.HasLen), 0)
	d.Start(c, d.Args...)
	c.Check(looseModes(c, d.Root), check.HasLen, 0, check.Commentf("modes after a restart on a loosened store:\n%s", strings.Join(looseModes(c, d.Root), "\n")))
	readable = nobodyReads(c, d.Root)
	c.Check(readable, check.HasLen, 0, check.Commentf("after the restart user nobody reads:\n%s", strings.Join(readable, "\n")))
	c.Check(imageState(c, d), check.HasLen, 2)
}

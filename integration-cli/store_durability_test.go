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
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/api/types"
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

var _ = check.Suite(&StoreDurabilitySuite{})

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

// storeCheck is GET /wharf/system/check (full) decoded into api/types.
func storeCheck(c *check.C, d *Daemon) types.CheckReport {
	r := d.Get(c, "/v1.50/wharf/system/check")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("system check: %s", r))
	var rep types.CheckReport
	r.JSON(c, &rep)
	return rep
}

// blobFiles are the files under <root>/blobs/sha256, digest → size.
func blobFiles(c *check.C, root string) map[string]int64 {
	dir := filepath.Join(root, "blobs", "sha256")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int64{}
	}
	c.Assert(err, check.IsNil)
	out := map[string]int64{}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // removed while listing
		}
		out["sha256:"+e.Name()] = fi.Size()
	}
	return out
}

// usedBlobs are the blobs the images listed by GET /images/json use: each
// image's top-level descriptor (inspect's Descriptor), read from disk and
// followed — an index to the manifests of it that are stored, a manifest to
// its config and layers.
func usedBlobs(c *check.C, d *Daemon) map[string]bool {
	var list []struct{ ID string }
	d.Get(c, "/v1.50/images/json?all=1").JSON(c, &list)
	used := map[string]bool{}
	var follow func(dg string, depth int)
	follow = func(dg string, depth int) {
		if used[dg] || depth > 4 {
			return
		}
		used[dg] = true
		b, err := os.ReadFile(filepath.Join(d.Root, "blobs", "sha256", strings.TrimPrefix(dg, "sha256:")))
		if err != nil {
			return // a missing blob: the caller reports it
		}
		var doc struct {
			Manifests []struct{ Digest string }
			Config    *struct{ Digest string }
			Layers    []struct{ Digest string }
		}
		if json.Unmarshal(b, &doc) != nil {
			return
		}
		for _, m := range doc.Manifests {
			if fileExists(filepath.Join(d.Root, "blobs", "sha256", strings.TrimPrefix(m.Digest, "sha256:"))) {
				follow(m.Digest, depth+1)
			}
		}
		if doc.Config != nil {
			used[doc.Config.Digest] = true
		}
		for _, l := range doc.Layers {
			used[l.Digest] = true
		}
	}
	for _, im := range list {
		var insp struct {
			ID         string
			Descriptor *struct{ Digest string }
		}
		r := d.Get(c, "/v1.50/images/"+im.ID+"/json")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("listed image %s does not inspect: %s", im.ID, r))
		r.JSON(c, &insp)
		c.Assert(insp.Descriptor, check.NotNil, check.Commentf("inspect %s has no Descriptor: %s", im.ID, r))
		used[insp.ID] = true
		follow(insp.Descriptor.Digest, 0)
	}
	return used
}

// extraBlobs are the blob files no image in used needs, sorted.
func extraBlobs(c *check.C, root string, used map[string]bool) ([]string, int64) {
	var extra []string
	var n int64
	for dg, size := range blobFiles(c, root) {
		if !used[dg] {
			extra = append(extra, fmt.Sprintf("%s (%d bytes)", dg, size))
			n += size
		}
	}
	sort.Strings(extra)
	return extra, n
}

// orphanReport is "" when blobs/sha256 holds exactly the blobs the listed
// images use and the store check counts no unreferenced blob; otherwise it
// says what is wrong. Blob files may take up to timeout to go away (garbage
// collection after a failed operation or at start-up).
func orphanReport(c *check.C, d *Daemon, timeout time.Duration) string {
	used := usedBlobs(c, d)
	waitFor(timeout, func() bool {
		extra, _ := extraBlobs(c, d.Root, used)
		return len(extra) == 0
	})
	var out []string
	extra, n := extraBlobs(c, d.Root, used)
	if len(extra) > 0 {
		out = append(out, fmt.Sprintf("%d orphan blob(s), %d bytes, under blobs/sha256 that no image uses:\n  %s",
			len(extra), n, strings.Join(extra, "\n  ")))
	}
	onDisk := blobFiles(c, d.Root)
	var missing []string
	for dg := range used {
		if _, ok := onDisk[dg]; !ok {
			missing = append(missing, dg)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		out = append(out, "blob(s) an image uses are missing: "+strings.Join(missing, ", "))
	}
	rep := storeCheck(c, d)
	if rep.UnreferencedBlobs != 0 || rep.UnreferencedBytes != 0 {
		out = append(out, fmt.Sprintf("system check: UnreferencedBlobs %d, UnreferencedBytes %d", rep.UnreferencedBlobs, rep.UnreferencedBytes))
	}
	for _, p := range rep.Problems {
		if p.Kind == "unreferenced-blob" {
			out = append(out, "system check: "+p.Kind+": "+p.Message)
		}
	}
	return strings.Join(out, "\n")
}

// imageState is GET /images/json?all=1 as sorted "ID ref" lines ("ID
// <none>" for an image without tags).
func imageState(c *check.C, d *Daemon) []string {
	var list []struct {
		ID       string
		RepoTags []string
	}
	d.Get(c, "/v1.50/images/json?all=1").JSON(c, &list)
	out := []string{}
	for _, im := range list {
		if len(im.RepoTags) == 0 {
			out = append(out, im.ID+" <none>")
		}
		for _, t := range im.RepoTags {
			out = append(out, im.ID+" "+t)
		}
	}
	sort.Strings(out)
	return out
}

// lists reports whether the image list names ref (familiar form).
func lists(state []string, ref string) bool {
	for _, l := range state {
		if strings.HasSuffix(l, " "+ref) {
			return true
		}
	}
	return false
}

// listsID reports whether the image list holds the image id.
func listsID(state []string, id string) bool {
	for _, l := range state {
		if strings.HasPrefix(l, id+" ") {
			return true
		}
	}
	return false
}

// inspectStatus is the HTTP status of GET /images/NAME/json.
func inspectStatus(c *check.C, d *Daemon, name string) int {
	return d.Get(c, "/v1.50/images/"+name+"/json").Status
}

// saveArchive pulls name:tag, saves it as a docker-save archive and removes
// it again; the archive is then a load that brings new blobs.
func saveArchive(c *check.C, d *Daemon, name, tag string) []byte {
	_, lines := d.Pull(c, name, tag, "")
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("pull %s:%s", name, tag))
	r := d.Get(c, "/v1.50/images/get?names="+url.QueryEscape(name+":"+tag))
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("save %s:%s: %s", name, tag, r))
	rm := d.Req(c, http.MethodDelete, "/v1.50/images/"+name+":"+tag, nil)
	c.Assert(rm.Status, check.Equals, http.StatusOK, check.Commentf("rmi %s:%s: %s", name, tag, rm))
	return r.Body
}

// loadArchive runs POST /images/load and returns the error the client sees
// ("" on success).
func loadArchive(c *check.C, d *Daemon, archive []byte) string {
	r := d.Req(c, http.MethodPost, "/v1.50/images/load", bytes.NewReader(archive), "Content-Type", "application/x-tar")
	if r.Status != http.StatusOK {
		return fmt.Sprintf("status %d: %s", r.Status, r)
	}
	return r.Lines(c).Err()
}

// ---- a small tmpfs as data-root ----

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory and returns
// it with the function that unmounts it (call it after wharfd is gone).
func mountTmpfs(c *check.C, size int64) (string, func()) {
	mnt := c.MkDir()
	err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size))
	c.Assert(err, check.IsNil, check.Commentf("mount tmpfs on %s (the suite runs as root)", mnt))
	return mnt, func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) }
}

// fillTo makes the file system at mnt have exactly free blocks (pages)
// left: mnt/filler, outside the data-root's own directories, grows until
// ENOSPC and then gives back free blocks. Should space come free meanwhile
// (a garbage collection finishing), it fills again. It returns the block
// size.
func fillTo(c *check.C, mnt string, free int64) int64 {
	var st syscall.Statfs_t
	c.Assert(syscall.Statfs(mnt, &st), check.IsNil)
	bsize := int64(st.Bsize)
	f, err := os.OpenFile(filepath.Join(mnt, "filler"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	c.Assert(err, check.IsNil)
	defer f.Close()
	buf := make([]byte, 256<<10)
	deadline := time.Now().Add(stageTimeout)
	for {
		for {
			_, err := f.Write(buf)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			c.Assert(err, check.IsNil)
		}
		fi, err := f.Stat()
		c.Assert(err, check.IsNil)
		held := (fi.Size() + bsize - 1) / bsize
		c.Assert(held >= free, check.Equals, true, check.Commentf("filler holds %d blocks, %d wanted free", held, free))
		c.Assert(f.Truncate((held-free)*bsize), check.IsNil)
		c.Assert(syscall.Statfs(mnt, &st), check.IsNil)
		if int64(st.Bavail) == free {
			return bsize
		}
		c.Assert(time.Now().Before(deadline), check.Equals, true, check.Commentf("%s: %d blocks free, %d wanted", mnt, st.Bavail, free))
	}
}

// unfill removes the filler: the space is free again.
func unfill(c *check.C, mnt string) {
	c.Assert(os.Remove(filepath.Join(mnt, "filler")), check.IsNil)
}

// blocks is how many file-system blocks files of these sizes take.
func blocks(bsize int64, sizes ...int64) int64 {
	var n int64
	for _, s := range sizes {
		n += (s + bsize - 1) / bsize
	}
	return n
}

// archiveBlobSizes are the sizes of the blobs/… entries of a tar.
func archiveBlobSizes(c *check.C, archive []byte) []int64 {
	var sizes []int64
	for _, e := range tarEntries(c, archive) {
		if strings.HasPrefix(e.name, "blobs/") {
			sizes = append(sizes, int64(len(e.body)))
		}
	}
	c.Assert(sizes, check.Not(check.HasLen), 0)
	return sizes
}

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

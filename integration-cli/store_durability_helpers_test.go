package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/api/types"
)

// StoreDurabilitySuite's machinery: what the store holds on disk and says
// it uses, save and load, and a tmpfs filled to a given free size.

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

package integration

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/api/types"
)

// fsNode is one path of an image's filesystem as every side of the
// comparison reports it: dockerd's export, umoci's unpack, wharf's ls and
// wharf's cp.
type fsNode struct {
	Type string      // the FileEntry.Type words: file, dir, symlink, fifo, char, block
	Mode fs.FileMode // permission bits with setuid, setgid and sticky
	UID  int64
	GID  int64
	Size int64  // regular files
	Link string // a symlink's target as written
	// Digest is the content's sha256:…; "" when the side does not know it
	// (ls without a recorded digest).
	Digest string
	// MTime in Unix seconds; 0 when not compared (directories: see
	// compareTrees).
	MTime int64
	// hardlink is a hardlink entry's target, resolved by finish.
	hardlink string
}

// fsTree is a whole image filesystem: path → node, and the hardlink
// groups (each sorted, joined by "|"), which name files sharing an inode.
type fsTree struct {
	nodes  map[string]*fsNode
	groups []string
}

// dockerAdded are the paths `docker create` adds to a container's rootfs
// that are not the image's (moby's daemon/initlayer: the init layer's
// mount points and files, and their parents): the only paths the
// comparison drops from the oracle's export. The corpus keeps out of
// /etc, /dev, /proc and /sys so that these are docker's alone.
var dockerAdded = map[string]bool{
	"/.dockerenv": true, "/etc": true, "/etc/hostname": true, "/etc/hosts": true, "/etc/resolv.conf": true, "/etc/mtab": true,
	"/dev": true, "/dev/console": true, "/dev/pts": true, "/dev/shm": true, "/proc": true, "/sys": true,
}

// cleanName makes a tar or listing name absolute and clean ("./a/" → "/a").
func cleanName(name string) string {
	return path.Clean("/" + strings.TrimPrefix(name, "./"))
}

func newTree() *fsTree { return &fsTree{nodes: map[string]*fsNode{}} }

// without is t less its device nodes and fifos (which wharf cp to a
// directory skips, saying so).
func (t *fsTree) without(types ...string) *fsTree {
	out := &fsTree{nodes: map[string]*fsNode{}, groups: t.groups}
	for p, n := range t.nodes {
		if !slices.Contains(types, n.Type) {
			out.nodes[p] = n
		}
	}
	return out
}

// treeFromTar reads a tar of a whole filesystem (docker export, wharf cp).
func treeFromTar(c *check.C, b []byte, drop map[string]bool) *fsTree {
	t := newTree()
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		c.Assert(err, check.IsNil)
		p := cleanName(h.Name)
		if p == "/" || drop[p] {
			continue
		}
		fi := h.FileInfo()
		n := &fsNode{Mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky), UID: int64(h.Uid), GID: int64(h.Gid), MTime: h.ModTime.Unix()}
		switch h.Typeflag {
		case tar.TypeReg:
			body, err := io.ReadAll(tr)
			c.Assert(err, check.IsNil)
			n.Type, n.Size, n.Digest = "file", int64(len(body)), sha(body)
		case tar.TypeLink:
			n.Type, n.hardlink = "hardlink", cleanName(h.Linkname)
		case tar.TypeDir:
			n.Type = "dir"
		case tar.TypeSymlink:
			n.Type, n.Link = "symlink", h.Linkname
		case tar.TypeFifo:
			n.Type = "fifo"
		case tar.TypeChar:
			n.Type = "char"
		case tar.TypeBlock:
			n.Type = "block"
		default:
			c.Fatalf("%s: unexpected tar type %q", p, h.Typeflag)
		}
		t.nodes[p] = n
	}
	t.finish()
	return t
}

// treeFromDir reads an unpacked rootfs (umoci's); files sharing an inode
// form a hardlink group.
func treeFromDir(c *check.C, root string) *fsTree {
	t := newTree()
	inodes := map[uint64][]string{}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		rel := "/" + filepath.ToSlash(p[len(root)+1:])
		n := &fsNode{Mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky), UID: int64(st.Uid), GID: int64(st.Gid), MTime: fi.ModTime().Unix()}
		m := fi.Mode()
		switch {
		case m.IsRegular():
			body, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n.Type, n.Size, n.Digest = "file", int64(len(body)), sha(body)
			if st.Nlink > 1 {
				inodes[st.Ino] = append(inodes[st.Ino], rel)
			}
		case m.IsDir():
			n.Type = "dir"
		case m&fs.ModeSymlink != 0:
			n.Type = "symlink"
			n.Link, err = os.Readlink(p)
			if err != nil {
				return err
			}
		case m&fs.ModeNamedPipe != 0:
			n.Type = "fifo"
		case m&fs.ModeCharDevice != 0:
			n.Type = "char"
		case m&fs.ModeDevice != 0:
			n.Type = "block"
		}
		t.nodes[rel] = n
		return nil
	})
	c.Assert(err, check.IsNil)
	for _, g := range inodes {
		sort.Strings(g)
		t.groups = append(t.groups, strings.Join(g, "|"))
	}
	sort.Strings(t.groups)
	return t
}

// treeFromListing reads `wharf ls -R --format json` (the API's NDJSON).
func treeFromListing(c *check.C, out string) *fsTree {
	t := newTree()
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20) // one entry: a path of at most 4 KiB plus its fields
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var e types.FileEntry
		c.Assert(json.Unmarshal([]byte(line), &e), check.IsNil, check.Commentf("%q", line))
		p := cleanName(e.Path)
		if p == "/" {
			continue
		}
		m := fs.FileMode(e.Mode)
		n := &fsNode{Type: e.Type, Mode: m & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky), UID: e.Uid, GID: e.Gid, Digest: e.Digest}
		if mt, err := time.Parse(time.RFC3339Nano, e.ModTime); err == nil {
			n.MTime = mt.Unix()
		}
		switch e.Type {
		case "file":
			n.Size = e.Size
		case "symlink":
			n.Link = e.Linkname
		case "hardlink":
			n.hardlink = cleanName(e.Linkname)
		}
		t.nodes[p] = n
	}
	c.Assert(sc.Err(), check.IsNil)
	t.finish()
	return t
}

// finish resolves hardlink entries: each takes its target's attributes
// (one inode) and joins its group. A hardlink whose target is missing
// stays a "hardlink" node, which no unpacked filesystem has, so the
// comparison reports it.
func (t *fsTree) finish() {
	group := map[string][]string{}
	for _, p := range sortedKeys(t.nodes) {
		n := t.nodes[p]
		if n.Type != "hardlink" {
			continue
		}
		root := n.hardlink
		for i := 0; i < 40; i++ { // a chain of links to links, as some writers emit
			if r, ok := t.nodes[root]; ok && r.Type == "hardlink" {
				root = r.hardlink
				continue
			}
			break
		}
		target, ok := t.nodes[root]
		if !ok || target.Type != "file" {
			continue
		}
		cp := *target
		cp.hardlink = ""
		t.nodes[p] = &cp
		if _, ok := group[root]; !ok {
			group[root] = []string{root}
		}
		group[root] = append(group[root], p)
	}
	for _, g := range group {
		sort.Strings(g)
		t.groups = append(t.groups, strings.Join(g, "|"))
	}
	sort.Strings(t.groups)
}

// compareOpts choose what a side can be held to.
type compareOpts struct {
	// digests compares file contents (cp and unpacks; ls when it reports
	// a digest).
	digests bool
	// mtimes compares files' and symlinks' mtimes. Directories' are never
	// compared: applying a whiteout or opaque marker, and docker's own
	// init layer, touch a directory after its header set the time.
	mtimes bool
	// noOwners skips uid and gid (wharf cp to a directory keeps modes,
	// not owners, as docker cp does).
	noOwners bool
}

// compareTrees lists every difference between want (the oracle) and got,
// one line per path and field; empty when they agree.
func compareTrees(want, got *fsTree, o compareOpts) []string {
	var diffs []string
	paths := map[string]bool{}
	for p := range want.nodes {
		paths[p] = true
	}
	for p := range got.nodes {
		paths[p] = true
	}
	all := sortedKeys(paths)
	for _, p := range all {
		w, g := want.nodes[p], got.nodes[p]
		switch {
		case w == nil:
			diffs = append(diffs, fmt.Sprintf("%s: not in the oracle; got %s", p, g))
			continue
		case g == nil:
			diffs = append(diffs, fmt.Sprintf("%s: missing; the oracle has %s", p, w))
			continue
		}
		field := func(name string, wv, gv any) {
			if wv != gv {
				diffs = append(diffs, fmt.Sprintf("%s: %s: oracle %v, got %v", p, name, wv, gv))
			}
		}
		field("type", w.Type, g.Type)
		if w.Type != g.Type {
			continue
		}
		if w.Type != "symlink" { // Linux keeps no symlink permissions
			field("mode", w.Mode, g.Mode)
		}
		if !o.noOwners {
			field("uid", w.UID, g.UID)
			field("gid", w.GID, g.GID)
		}
		switch w.Type {
		case "file":
			field("size", w.Size, g.Size)
			if o.digests || (w.Digest != "" && g.Digest != "") {
				field("digest", w.Digest, g.Digest)
			}
			if o.mtimes {
				field("mtime", w.MTime, g.MTime)
			}
		case "symlink":
			field("link", w.Link, g.Link)
			if o.mtimes {
				field("mtime", w.MTime, g.MTime)
			}
		}
	}
	if strings.Join(want.groups, " ") != strings.Join(got.groups, " ") {
		diffs = append(diffs, fmt.Sprintf("hardlink groups: oracle %q, got %q", want.groups, got.groups))
	}
	return diffs
}

func (n *fsNode) String() string {
	if n == nil {
		return "nothing"
	}
	s := fmt.Sprintf("%s %v %d:%d", n.Type, n.Mode, n.UID, n.GID)
	switch n.Type {
	case "file":
		s += fmt.Sprintf(" size %d %s", n.Size, short(n.Digest))
	case "symlink":
		s += " -> " + n.Link
	case "hardlink":
		s += " => " + n.hardlink
	}
	return s
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

//go:build bench

package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The diff's baseline: what a user does today to learn what changed
// between two versions, with the tools at hand. `crane pull --format=oci A
// B DIR` downloads both images into one OCI layout (a blob both share is
// written once, as docker's store would keep it once), then layoutDiff
// flattens each image's layers in order (whiteouts applied), digests every
// file, and compares the two trees path by path (type, mode, owner, size,
// link, content), and the dpkg status of each, package by package: the
// files and packages sections of `wharf diff`.

// treeEntry is one path of a flattened image.
type treeEntry struct {
	typ      byte
	mode     int64
	uid, gid int
	size     int64
	link     string
	sum      [sha256.Size]byte
	layer    int
}

// baselineDiff is what the comparison found.
type baselineDiff struct {
	changed, added, removed []string
	packages                []string // "NAME FROM -> TO", "+NAME", "-NAME"
}

// layoutDiff compares images from and to (manifest digests) of the OCI
// layout at dir.
func layoutDiff(dir, from, to string) (*baselineDiff, error) {
	a, aStatus, err := flattenLayout(dir, from)
	if err != nil {
		return nil, err
	}
	b, bStatus, err := flattenLayout(dir, to)
	if err != nil {
		return nil, err
	}
	d := &baselineDiff{}
	for p, ea := range a {
		eb, ok := b[p]
		switch {
		case !ok:
			d.removed = append(d.removed, p)
		case ea.typ != eb.typ || ea.mode != eb.mode || ea.uid != eb.uid || ea.gid != eb.gid ||
			ea.size != eb.size || ea.link != eb.link || ea.sum != eb.sum:
			d.changed = append(d.changed, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			d.added = append(d.added, p)
		}
	}
	sort.Strings(d.changed)
	sort.Strings(d.added)
	sort.Strings(d.removed)
	pa, pb := dpkgVersions(aStatus), dpkgVersions(bStatus)
	for name, va := range pa {
		if vb, ok := pb[name]; !ok {
			d.packages = append(d.packages, "-"+name)
		} else if va != vb {
			d.packages = append(d.packages, name+" "+va+" -> "+vb)
		}
	}
	for name := range pb {
		if _, ok := pa[name]; !ok {
			d.packages = append(d.packages, "+"+name)
		}
	}
	sort.Strings(d.packages)
	return d, nil
}

// flattenLayout applies the layers of the image whose manifest is dgst in
// the layout at dir, bottom first, and returns its tree and the content of
// its dpkg status.
func flattenLayout(dir, dgst string) (map[string]*treeEntry, []byte, error) {
	blob := func(d string) string {
		alg, enc, _ := strings.Cut(d, ":")
		return filepath.Join(dir, "blobs", alg, enc)
	}
	mb, err := os.ReadFile(blob(dgst))
	if err != nil {
		return nil, nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", dgst, err)
	}
	tree := map[string]*treeEntry{}
	var status []byte
	for i, l := range m.Layers {
		if err := applyLayer(blob(l.Digest.String()), i, tree, &status); err != nil {
			return nil, nil, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return tree, status, nil
}

func applyLayer(file string, layer int, tree map[string]*treeEntry, status *[]byte) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	// removeUnder drops p and what lies under it in the layers below.
	removeUnder := func(p string, keepSelf bool) {
		for q, e := range tree {
			if e.layer < layer && ((!keepSelf && q == p) || strings.HasPrefix(q, p+"/")) {
				delete(tree, q)
			}
		}
	}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := path.Clean("/" + h.Name)
		base := path.Base(p)
		switch {
		case base == ".wh..wh..opq":
			removeUnder(path.Dir(p), true)
			continue
		case strings.HasPrefix(base, ".wh."):
			removeUnder(path.Join(path.Dir(p), strings.TrimPrefix(base, ".wh.")), false)
			continue
		}
		e := &treeEntry{typ: h.Typeflag, mode: h.Mode, uid: h.Uid, gid: h.Gid, size: h.Size, link: h.Linkname, layer: layer}
		if h.Typeflag == tar.TypeReg {
			sum := sha256.New()
			var w io.Writer = sum
			var buf bytes.Buffer
			if p == diffStatusPath {
				w = io.MultiWriter(sum, &buf)
			}
			if _, err := io.Copy(w, tr); err != nil {
				return err
			}
			copy(e.sum[:], sum.Sum(nil))
			if p == diffStatusPath {
				*status = buf.Bytes()
			}
		}
		tree[p] = e
	}
}

// dpkgVersions reads Package and Version of each stanza of a dpkg status.
func dpkgVersions(status []byte) map[string]string {
	out := map[string]string{}
	var name string
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Package: "); ok {
			name = v
		} else if v, ok := strings.CutPrefix(line, "Version: "); ok && name != "" {
			out[name] = v
		} else if line == "" {
			name = ""
		}
	}
	return out
}

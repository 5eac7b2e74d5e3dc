package layerindex

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// The oracle: umoci, which no one here wrote, unpacks each merge case's
// image into a directory, and the directory must equal the merged view,
// path by path: type, permissions (setuid included), owner, link target
// and content.
func TestMergeAgainstUmoci(t *testing.T) {
	umoci := needUmoci(t)
	cases := append([]struct {
		name   string
		layers [][]tf
		want   []string
	}{}, mergeCases...)
	cases = append(cases, struct {
		name   string
		layers [][]tf
		want   []string
	}{name: "modes, owners and symlinks", layers: [][]tf{
		{dir("bin/"), tf{name: "bin/su", typ: '0', body: "su", mode: 0o4755, uid: 0}, tf{name: "bin/sg", typ: '0', body: "sg", mode: 0o2711, uid: 42},
			tf{name: "tmp/", typ: '5', mode: 0o1777}, symlink("abs", "/bin/su"), symlink("out", "../../../etc/passwd"), symlink("loop", "loop"),
			tf{name: "fifo", typ: '6', mode: 0o600}},
		{tf{name: "bin/", typ: '5', mode: 0o700, uid: 7}, hardlink("bin/su2", "bin/su")},
	}}, struct {
		name   string
		layers [][]tf
		want   []string
	}{name: "long names, PAX and GNU", layers: [][]tf{
		{tf{name: longName("pax"), body: "p", uid: 3000000}, tf{name: longName("gnu"), body: "g", format: tar.FormatGNU},
			tf{name: "l", typ: tar.TypeSymlink, link: "/" + longName("gnu"), format: tar.FormatGNU}},
		{hardlink("h", longName("pax")), whiteout(longName("gnu")[:len(longName("gnu"))-4] + ".wh.file")},
	}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, ls := mergeLayers(t, tc.layers...)
			dir := t.TempDir()
			writeLayout(t, filepath.Join(dir, "image"), ls)
			out, err := exec.Command(umoci, "unpack", "--image", filepath.Join(dir, "image")+":t", filepath.Join(dir, "bundle")).CombinedOutput()
			if err != nil {
				t.Fatalf("umoci unpack: %v\n%s", err, out)
			}
			got := oracleListing(t, filepath.Join(dir, "bundle", "rootfs"))
			var mine []string
			err = v.List(context.Background(), "/", true, func(it Item) error {
				mine = append(mine, itemLine(t, ls, it))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if os.Getenv("SHOW") != "" {
				t.Logf("%q", got)
			}
			if !slices.Equal(mine, got) {
				t.Fatalf("view and umoci differ\n view  %q\n umoci %q", mine, got)
			}
		})
	}
}

// longName is a 244-byte path under top: too long for ustar.
func longName(top string) string {
	return top + "/" + strings.Repeat("long-directory-name/", 12) + "file"
}

// A sparse file unpacks to its logical bytes, which the index's digest
// and size describe.
func TestSparseAgainstUmoci(t *testing.T) {
	umoci := needUmoci(t)
	var buf bytes.Buffer
	buf.Write(testregistry.SparseTarEntry("holes", 1<<20, []byte("tail")))
	buf.Write(make([]byte, 1024))
	l := buildLayer(t, buf.Bytes())
	dir := t.TempDir()
	writeLayout(t, filepath.Join(dir, "image"), []layer{l})
	if out, err := exec.Command(umoci, "unpack", "--image", filepath.Join(dir, "image")+":t", filepath.Join(dir, "bundle")).CombinedOutput(); err != nil {
		t.Fatalf("umoci unpack: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bundle", "rootfs", "holes"))
	if err != nil {
		t.Fatal(err)
	}
	e := l.ix.Entries[0]
	if int64(len(b)) != e.Size || sha256.Sum256(b) != e.SHA256 || !e.Sparse {
		t.Fatalf("umoci unpacked %d bytes; the index says %d, sparse %v, digest match %v", len(b), e.Size, e.Sparse, sha256.Sum256(b) == e.SHA256)
	}
}

// itemLine is the view's side of the comparison.
func itemLine(t *testing.T, ls []layer, it Item) string {
	e := it.Entry
	if it.Content != nil {
		e = it.Content.Entry
		e.UID, e.GID = it.Content.Entry.UID, it.Content.Entry.GID
	}
	return line(it.Path, e.Mode, e.UID, e.GID, e.Linkname, contentOf(t, ls, it))
}

func line(p string, mode fs.FileMode, uid, gid int64, link, content string) string {
	if mode&fs.ModeSymlink != 0 {
		// Symlink permissions are not kept by Linux.
		mode = fs.ModeSymlink
	}
	return fmt.Sprintf("%s %v %d:%d %s %x", p, mode, uid, gid, link, sha256.Sum256([]byte(content)))
}

// oracleListing is the unpacked directory in List's order.
func oracleListing(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel := "/" + filepath.ToSlash(p[len(root)+1:])
		link, content := "", ""
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			link, _ = os.Readlink(p)
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			content = string(b)
		}
		uid, gid := owner(fi)
		out = append(out, line(rel, fi.Mode(), uid, gid, link, content))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// WalkDir sorts by name within a directory, as List does.
	return out
}

// writeLayout writes an OCI image layout of the layers (gzip), tagged t.
func writeLayout(t *testing.T, dir string, ls []layer) {
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(b []byte) digest.Digest {
		d := digest.FromBytes(b)
		if err := os.WriteFile(filepath.Join(blobs, d.Encoded()), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	type desc struct {
		MediaType   string            `json:"mediaType"`
		Digest      digest.Digest     `json:"digest"`
		Size        int               `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	var layers []desc
	var diffIDs []digest.Digest
	for _, l := range ls {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(l.raw)
		zw.Close()
		layers = append(layers, desc{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: put(gz.Bytes()), Size: gz.Len()})
		diffIDs = append(diffIDs, digest.FromBytes(l.raw))
	}
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cfg := mustJSON(map[string]any{"architecture": "amd64", "os": "linux", "config": map[string]any{},
		"rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs}})
	man := mustJSON(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": desc{MediaType: "application/vnd.oci.image.config.v1+json", Digest: put(cfg), Size: len(cfg)}, "layers": layers})
	index := mustJSON(map[string]any{"schemaVersion": 2, "manifests": []desc{{MediaType: "application/vnd.oci.image.manifest.v1+json",
		Digest: put(man), Size: len(man), Annotations: map[string]string{"org.opencontainers.image.ref.name": "t"}}}})
	if err := os.WriteFile(filepath.Join(dir, "index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// needUmoci is the oracle's path. Without it, or without root (umoci
// unpacks owners and setuid bits as root only), the oracle tests skip,
// except under CI=true, where .ci/run installs umoci and runs as root: a
// skipped oracle there would pass what it never compared.
func needUmoci(t *testing.T) string {
	t.Helper()
	umoci, err := exec.LookPath("umoci")
	why := ""
	switch {
	case err != nil:
		why = "umoci not installed (apt-get install umoci)"
	case os.Geteuid() != 0:
		why = "umoci unpacks owners and setuid bits as root only"
	default:
		return umoci
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

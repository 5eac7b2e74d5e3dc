package untar

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A symlink keeps its archive mtime, as docker cp's does, and setting it
// follows nothing: the target outside dest keeps its own.
func TestExtractKeepsSymlinkTimes(t *testing.T) {
	parent, dest := sandbox(t)
	outside := filepath.Join(parent, "outside")
	before, err := os.Lstat(outside)
	if err != nil {
		t.Fatal(err)
	}
	a := archive(t,
		ent{typ: tar.TypeDir, name: "d/"},
		ent{typ: tar.TypeSymlink, name: "d/rel", link: "target"},
		ent{typ: tar.TypeSymlink, name: "d/out", link: outside},
		ent{typ: tar.TypeSymlink, name: "d/dangling", link: "/no/such"},
	)
	if _, err := Extract(context.Background(), bytes.NewReader(a), dest, Options{Top: "d", NewTop: "d"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"rel", "out", "dangling"} {
		fi, err := os.Lstat(filepath.Join(dest, "d", n))
		if err != nil || !fi.ModTime().Equal(time.Unix(1_600_000_000, 0)) {
			t.Errorf("%s: mtime %v %v, want the archive's", n, fi.ModTime(), err)
		}
	}
	if after, err := os.Lstat(outside); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the link's target outside dest changed: %v → %v", before.ModTime(), after.ModTime())
	}
	assertContained(t, parent)
}

package contents

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

// A cold cat indexes the layer and keeps the file in the same pass: one
// whole read of the layer, no range request after it.
func TestColdCatReadsTheLayerOnce(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, baseLayer(t))))
	if got := cat(t, r, img, "etc/passwd"); got != "root:x:0:0\n" {
		t.Fatalf("cold cat: %q", got)
	}
	if blobs.opens.Load() != 1 || blobs.ranges.Load() != 0 {
		t.Fatalf("cold cat: %d opens, %d ranges; want 1 and 0", blobs.opens.Load(), blobs.ranges.Load())
	}
	// Another file of the built index is one range, as before.
	if got := cat(t, r, img, "/etc/os-release"); got != "ID=test\n" {
		t.Fatalf("cat: %q", got)
	}
	if blobs.opens.Load() != 1 || blobs.ranges.Load() != 1 {
		t.Fatalf("second file: %d opens, %d ranges; want 1 and 1", blobs.opens.Load(), blobs.ranges.Load())
	}
}

// A file read on its own is held for the next read of it.
func TestAFileReadIsHeldForTheNextRead(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, baseLayer(t))))
	listOf(t, r, img, types.FilesOptions{Recursive: true})
	for range 3 {
		if got := cat(t, r, img, "/etc/passwd"); got != "root:x:0:0\n" {
			t.Fatalf("cat: %q", got)
		}
	}
	if blobs.ranges.Load() != 1 {
		t.Fatalf("three cats of one file: %d ranges; want 1", blobs.ranges.Load())
	}
}

// Nothing a pass kept outlives a layer that failed its digest: the cat
// fails, and the right bytes are read afterwards.
func TestKeptBytesOfAFailedLayerAreDropped(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	b, desc := gzipOf(t, baseLayer(t))
	img := imageOf(blobs, lb(b, desc))
	// The same entries at the same offsets, other bytes in /etc/passwd.
	evil, _ := gzipOf(t, tarOf(t,
		tdir("etc"), tfile("etc/os-release", "ID=test\n"), tfile("etc/passwd", "evil:x:0:0\n"),
		tdir("bin"), tfile("bin/sh", string(bytes.Repeat([]byte("#!"), 1000))), tlink("bin/ash", "bin/sh"),
		tsym("etc/alias", "/etc/passwd"), tsym("abs", "../../etc")))
	blobs.corrupt[desc.Digest] = evil
	var buf bytes.Buffer
	if err := r.Cat(context.Background(), img, "/etc/passwd", &buf); err == nil || buf.Len() != 0 {
		t.Fatalf("cat of a layer that fails its digest: %q, %v", buf.String(), err)
	}
	delete(blobs.corrupt, desc.Digest)
	if got := cat(t, r, img, "/etc/passwd"); got != "root:x:0:0\n" {
		t.Fatalf("after the right bytes: %q", got)
	}
}

// Want's Keep drops what it does not want once read: a read of that file
// for the same Want answers ErrDeclined at no cost; any other reader reads
// it by range like any other file.
func TestWantKeepDrops(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, baseLayer(t))))
	img.Want = &Want{
		File: func(p string, _ fs.FileMode, _ int64) bool { return p == "/etc/passwd" || p == "/bin/sh" },
		Keep: func(p string, _ fs.FileMode, data []byte) bool { return !bytes.HasPrefix(data, []byte("#!")) },
	}
	if got := cat(t, r, img, "/etc/passwd"); got != "root:x:0:0\n" {
		t.Fatalf("cat: %q", got)
	}
	var buf bytes.Buffer
	if err := r.Cat(context.Background(), img, "/bin/sh", &buf); !errors.Is(err, ErrDeclined) || buf.Len() != 0 {
		t.Fatalf("cat /bin/sh for the Want that declined it: %d bytes, %v", buf.Len(), err)
	}
	if blobs.opens.Load() != 1 || blobs.ranges.Load() != 0 {
		t.Fatalf("%d opens, %d ranges; want 1 (the index) and 0", blobs.opens.Load(), blobs.ranges.Load())
	}
	other := *img
	other.Want = nil
	if got := cat(t, r, &other, "/bin/sh"); got != string(bytes.Repeat([]byte("#!"), 1000)) {
		t.Fatalf("cat /bin/sh: %d bytes", len(got))
	}
	if blobs.ranges.Load() != 1 {
		t.Fatalf("%d ranges; want 1 (/bin/sh, for a reader that wants it)", blobs.ranges.Load())
	}
}

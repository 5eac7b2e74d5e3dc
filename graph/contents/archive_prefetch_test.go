package contents

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/moby/moby/api/types/container"

	"github.com/wharfproject/wharf/api/types"
)

// A small file whose bytes fail their digest is an error before the
// answer starts (start is never called), so the caller gets the reason
// instead of a cut connection; a good one is archived as before.
func TestArchiveOfAFileVerifiesBeforeItStarts(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	b, desc := gzipOf(t, baseLayer(t))
	img := imageOf(blobs, lb(b, desc))
	listOf(t, r, img, types.FilesOptions{Recursive: true}) // the index, from the right bytes
	// The same tar with other bytes of the same length: every offset
	// holds, only the content's digest fails.
	evil, _ := gzipOf(t, tarOf(t,
		tdir("etc"), tfile("etc/os-release", "ID=evil\n"), tfile("etc/passwd", "root:x:0:0\n"),
		tdir("bin"), tfile("bin/sh", string(bytes.Repeat([]byte("#!"), 1000))), tlink("bin/ash", "bin/sh"),
		tsym("etc/alias", "/etc/passwd"), tsym("abs", "../../etc")))
	blobs.corrupt[desc.Digest] = evil
	started := false
	err := r.Archive(context.Background(), img, "/etc/os-release", func(container.PathStat) (io.Writer, error) {
		started = true
		return io.Discard, nil
	})
	if err == nil || started {
		t.Fatalf("bytes that fail their digest: err %v, started %v; want an error before the start", err, started)
	}
	delete(blobs.corrupt, desc.Digest)
	var out bytes.Buffer
	if err := r.Archive(context.Background(), img, "/etc/os-release", func(container.PathStat) (io.Writer, error) { return &out, nil }); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte("ID=test\n")) {
		t.Fatalf("archive of the file lacks its bytes")
	}
}

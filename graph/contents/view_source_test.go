package contents

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/moby/moby/api/types/container"

	"github.com/wharfproject/wharf/api/types"
)

// A view merged from a layer's TOC index keeps reading right after the
// layer became local and its index was replaced by the layer's own (a
// pull): each read goes by the index the view's entry came from.
func TestReadsAfterTheTOCIndexIsReplaced(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(estargzOf(t, baseLayer(t))))
	for _, e := range listOf(t, r, img, types.FilesOptions{Recursive: true}) {
		if e.Source != "estargz" {
			t.Fatalf("%s: Source %q, want the TOC's", e.Path, e.Source)
		}
	}
	blobs.local = true
	if got := cat(t, r, img, "/etc/os-release"); got != "ID=test\n" {
		t.Fatalf("cat after the layer became local: %q", got)
	}
	var out bytes.Buffer
	if err := r.Archive(context.Background(), img, "/", func(container.PathStat) (io.Writer, error) { return &out, nil }); err != nil {
		t.Fatalf("archive after the layer became local: %v", err)
	}
	if !bytes.Contains(out.Bytes(), []byte("root:x:0:0")) {
		t.Fatal("the archive lacks a file's bytes")
	}
}

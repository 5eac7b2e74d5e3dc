package contents

import (
	"context"
	"errors"
	"testing"

	"github.com/wharfproject/wharf/internal/layerindex"
)

// The stat of a symlink resolves it inside the root, as dockerd's does: a
// loop fails with ELOOP's error (cat then says so instead of "a symlink
// to nothing"), a dangling link has a stat without a LinkTarget.
func TestStatOfSymlinks(t *testing.T) {
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, tarOf(t, tfile("f", "x"), tsym("ok", "/f"),
		tsym("loop1", "loop2"), tsym("loop2", "/loop1"), tsym("self", "self"), tsym("dangling", "/nope")))))
	for _, tc := range []struct {
		path, target string
		loop         bool
	}{
		{"/ok", "/f", false},
		{"/dangling", "", false},
		{"/loop1", "", true},
		{"/self", "", true},
	} {
		st, err := r.Stat(context.Background(), img, tc.path)
		if tc.loop {
			if !errors.Is(err, layerindex.ErrSymlinkLoop) {
				t.Errorf("%s: %v, want the loop's error", tc.path, err)
			}
			continue
		}
		if err != nil || st.LinkTarget != tc.target {
			t.Errorf("%s: %+v %v, want LinkTarget %q", tc.path, st, err, tc.target)
		}
	}
}

package contents

import (
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
)

// A hardlink is listed as one only while its target path still holds the
// bytes it shares; once a later layer removes or replaces the target, the
// link is the one name of its old inode: a file, as dockerd's export has
// it (integration-cli's OracleSuite found the difference).
func TestHardlinkListingFollowsItsTarget(t *testing.T) {
	lower := tarOf(t, tdir("h"),
		tfile("h/a", "shared"), tlink("h/b", "h/a"),
		tfile("h/t", "target body"), tlink("h/u", "h/t"),
		tfile("h/r", "old bytes"), tlink("h/s", "h/r"),
		tfile("h/m", "moved"), tlink("h/n", "h/m"))
	upper := tarOf(t, tdir("h"), tfile("h/.wh.t", ""), tfile("h/r", "new bytes, another inode"),
		tfile("h/.wh.m", ""), tfile("h/m", "moved"))
	r := newRoom(t, t.TempDir(), 0)
	blobs := newMemBlobs(false)
	img := imageOf(blobs, lb(gzipOf(t, lower)), lb(gzipOf(t, upper)))
	got := map[string]types.FileEntry{}
	for _, e := range listOf(t, r, img, types.FilesOptions{Path: "/h", Recursive: true}) {
		got[e.Path] = e
	}
	for _, tc := range []struct {
		path, typ, link, body string
	}{
		{"/h/b", "hardlink", "/h/a", ""},                 // target untouched: still a link
		{"/h/u", "file", "", "target body"},              // target whited out
		{"/h/s", "file", "", "old bytes"},                // target replaced by other bytes
		{"/h/n", "file", "", "moved"},                    // target replaced by equal bytes: another inode all the same
		{"/h/r", "file", "", "new bytes, another inode"}, // the replacement itself
	} {
		e, ok := got[tc.path]
		if !ok {
			t.Errorf("%s: not listed", tc.path)
			continue
		}
		if e.Type != tc.typ || e.Linkname != tc.link {
			t.Errorf("%s: type %q link %q, want %q %q", tc.path, e.Type, e.Linkname, tc.typ, tc.link)
		}
		if tc.body != "" && (e.Size != int64(len(tc.body)) || e.Digest != digest.FromString(tc.body).String()) {
			t.Errorf("%s: size %d digest %s, want the bytes %q", tc.path, e.Size, e.Digest, tc.body)
		}
		if tc.body != "" && cat(t, r, img, tc.path) != tc.body {
			t.Errorf("%s: cat disagrees with the listing", tc.path)
		}
	}
}

package layerindex

import (
	"errors"
	"fmt"
	"testing"

	"github.com/containerd/errdefs"
)

func TestResolveSymlinksInsideTheRoot(t *testing.T) {
	base := []tf{
		dir("bin/"), file("bin/sh", "sh"),
		dir("usr/"), dir("usr/bin/"), file("usr/bin/env", "env"),
		symlink("usr/bin/up", "../../bin/sh"),
		dir("etc/"), file("etc/passwd", "root:x:0:0"),
		symlink("abs", "/usr/bin"),
		symlink("rel", "usr/bin"),
		symlink("chain1", "chain2"), symlink("chain2", "/abs"),
		symlink("loop1", "loop2"), symlink("loop2", "/loop1"),
		symlink("self", "self"),
		symlink("escape", "../../../../etc/passwd"),
		symlink("escapeabs", "/../../etc"),
		symlink("dangling", "/nope"),
		symlink("empty", ""),
		symlink("dot", "."),
		symlink("tofile", "bin/sh/"),
	}
	// A chain of exactly MaxSymlinkHops links resolves; one more does not.
	// c0 … c40 are 41 links to c41, a file.
	for i := 0; i <= MaxSymlinkHops; i++ {
		base = append(base, symlink(fmt.Sprintf("c%d", i), fmt.Sprintf("c%d", i+1)))
	}
	base = append(base, file(fmt.Sprintf("c%d", MaxSymlinkHops+1), "end"))
	v, _ := mergeLayers(t, base)

	cases := []struct {
		path   string
		follow bool
		want   string
		err    error
	}{
		{"/abs/env", false, "/usr/bin/env", nil},
		{"rel/env", false, "/usr/bin/env", nil},
		{"/chain1/env", false, "/usr/bin/env", nil},
		{"/chain1", false, "/chain1", nil},
		{"/chain1", true, "/usr/bin", nil},
		{"/chain1/", false, "/usr/bin", nil},
		{"/usr/bin/up", true, "/bin/sh", nil},
		{"/abs/up", true, "/bin/sh", nil},
		{"/escape", true, "/etc/passwd", nil},
		{"/escapeabs/passwd", false, "/etc/passwd", nil},
		{"/../../../etc/passwd", false, "/etc/passwd", nil},
		{"/usr/../../bin/./sh", false, "/bin/sh", nil},
		{"/dot/dot/dot/bin", false, "/bin", nil},
		{"/", false, "/", nil},
		{"", false, "/", nil},
		{"/c1", true, fmt.Sprintf("/c%d", MaxSymlinkHops+1), nil},
		{"/c0", true, "", ErrSymlinkLoop},
		{"/loop1", true, "", ErrSymlinkLoop},
		{"/loop1", false, "/loop1", nil},
		{"/self/x", false, "", ErrSymlinkLoop},
		{"/dangling", true, "", ErrNotFound},
		{"/dangling", false, "/dangling", nil},
		{"/empty", true, "", ErrNotFound},
		{"/nope", false, "", ErrNotFound},
		{"/bin/sh/x", false, "", ErrNotDir},
		{"/bin/sh/", false, "", ErrNotDir},
		{"/bin/sh/..", false, "", ErrNotDir},
		{"/tofile", true, "", ErrNotDir},
	}
	for _, tc := range cases {
		got, err := v.Resolve(tc.path, tc.follow)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("Resolve(%q, %v) = %q, %v; want %v", tc.path, tc.follow, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q, %v) = %q, %v; want %q", tc.path, tc.follow, got, err, tc.want)
		}
	}

	_, err := v.Stat("/loop1")
	if !errdefs.IsInvalidArgument(err) {
		t.Errorf("a loop is not InvalidArgument: %v", err)
	}
	if _, err := v.Stat("/nope"); !errdefs.IsNotFound(err) {
		t.Errorf("a missing path is not NotFound: %v", err)
	}
	it, err := v.Lstat("/chain1")
	if err != nil || it.Type != TypeSymlink || it.Linkname != "chain2" || it.Size != int64(len("chain2")) {
		t.Errorf("Lstat(/chain1) = %+v, %v", it, err)
	}
	it, err = v.Stat("/abs/env")
	if err != nil || it.Type != TypeFile || it.Path != "/usr/bin/env" {
		t.Errorf("Stat(/abs/env) = %+v, %v", it, err)
	}
}

// A hardlink to a symlink is that symlink, as link(2) makes it.
func TestResolveHardlinkToSymlink(t *testing.T) {
	v, _ := mergeLayers(t, []tf{dir("d/"), file("d/f", "x"), symlink("s", "d"), hardlink("h", "s")})
	got, err := v.Resolve("/h/f", false)
	if err != nil || got != "/d/f" {
		t.Fatalf("Resolve(/h/f) = %q, %v", got, err)
	}
}

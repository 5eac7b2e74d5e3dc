package layertoc

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/containerd/stargz-snapshotter/estargz"
)

func TestCleanPath(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"etc/passwd", "/etc/passwd", nil},
		{"./etc/passwd", "/etc/passwd", nil},
		{"etc/", "/etc", nil},
		{"./", "/", nil},
		{".", "/", nil},
		{"a//b/./c/", "/a/b/c", nil},
		{"a/../b", "/b", nil},
		{"..a/b", "/..a/b", nil},
		{".wh..wh..opq", "/.wh..wh..opq", nil},
		{"", "", ErrInvalidTOC},
		{"..", "", ErrInvalidTOC},
		{"../x", "", ErrInvalidTOC},
		{"a/../../x", "", ErrInvalidTOC},
		{"/etc/passwd", "", ErrInvalidTOC},
		{"a\x00b", "", ErrInvalidTOC},
	} {
		got, err := cleanPath(tc.name, DefaultLimits())
		if got != tc.want || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("cleanPath(%q) = %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestParsePosition(t *testing.T) {
	for _, tc := range []struct {
		s          string
		off, n, nu int64
		err        error
	}{
		{"100:20:300:1", 100, 20, 300, nil},
		{"0:0:0:1", 0, 0, 0, nil},
		{"100:20:300:2", 0, 0, 0, ErrInvalidTOC},
		{"100:20:300", 0, 0, 0, ErrInvalidTOC},
		{"100:20:300:1:5", 0, 0, 0, ErrInvalidTOC},
		{"-1:20:300:1", 0, 0, 0, ErrInvalidTOC},
		{"+1:20:300:1", 0, 0, 0, ErrInvalidTOC},
		{"1 :20:300:1", 0, 0, 0, ErrInvalidTOC},
		{"0x10:20:300:1", 0, 0, 0, ErrInvalidTOC},
		{"99999999999999999999:20:300:1", 0, 0, 0, ErrInvalidTOC},
		{"", 0, 0, 0, ErrInvalidTOC},
	} {
		off, n, nu, err := parsePosition(tc.s)
		if off != tc.off || n != tc.n || nu != tc.nu || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("parsePosition(%q) = %d, %d, %d, %v", tc.s, off, n, nu, err)
		}
	}
}

func TestParseFooter(t *testing.T) {
	esFooter := estargz.CreateGzipFooter([]byte(fmt.Sprintf("SG\x16\x00%016xSTARGZ", 4660)))
	legacy := estargz.CreateGzipFooter([]byte(fmt.Sprintf("%016xSTARGZ", 4660)))
	for _, tc := range []struct {
		name     string
		tail     []byte
		off, n   int64
		wantFail bool
	}{
		{"estargz", esFooter, 4660, 51, false},
		{"estargz after data", append([]byte("some data"), esFooter...), 4660, 51, false},
		{"legacy stargz", legacy, 4660, 47, false},
		{"legacy after data", append([]byte("some data"), legacy...), 4660, 47, false},
		{"not hex", estargz.CreateGzipFooter([]byte("SG\x16\x00000000000000zzzzSTARGZ")), 0, 0, true},
		{"no magic", estargz.CreateGzipFooter([]byte(fmt.Sprintf("SG\x16\x00%016xSTARGX", 1))), 0, 0, true},
		{"offset over int64", estargz.CreateGzipFooter([]byte("SG\x16\x00ffffffffffffffffSTARGZ")), 0, 0, true},
		{"too short", esFooter[:40], 0, 0, true},
		{"not gzip", make([]byte, 51), 0, 0, true},
	} {
		off, n, err := parseFooter(tc.tail)
		if tc.wantFail {
			if !errors.Is(err, ErrInvalidTOC) {
				t.Errorf("%s: err = %v, want ErrInvalidTOC", tc.name, err)
			}
			continue
		}
		if err != nil || off != tc.off || n != tc.n {
			t.Errorf("%s: parseFooter = %d, %d, %v; want %d, %d", tc.name, off, n, err, tc.off, tc.n)
		}
	}
}

func TestTarMode(t *testing.T) {
	for _, tc := range []struct {
		m    int64
		want fs.FileMode
	}{
		{0o644, 0o644},
		{0o4755, fs.ModeSetuid | 0o755},
		{0o2755, fs.ModeSetgid | 0o755},
		{0o1777, fs.ModeSticky | 0o777},
		{0o100644, 0o644}, // type bits some writers leave in the mode
	} {
		if got := tarMode(tc.m); got != tc.want {
			t.Errorf("tarMode(%o) = %v, want %v", tc.m, got, tc.want)
		}
	}
}

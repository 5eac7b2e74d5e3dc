package untar

import (
	"archive/tar"
	"bytes"
	"context"
	"strings"
	"testing"
)

// FuzzExtractStaysInDest builds an archive from the input, one entry a
// line "T name link body" (T: f file, d dir, l symlink, h hardlink, c char
// device), extracts it, and fails when anything outside dest was written.
// Errors are fine: a hostile archive is refused, never followed.
func FuzzExtractStaysInDest(f *testing.F) {
	for _, s := range []string{
		"d etc\nf etc/hosts - h\nh etc/b etc/hosts\nl etc/os ../usr/lib/os",
		"l l ../outside\nf l/secret - x",
		"l l /\nd l/tmp",
		"l a .\nl a/b ..\nf a/b/outside/x - x",
		"l l ../outside/secret\nh h l",
		"f ../x - x",
		"l l l\nf l/x - x",
		"d a\nl a/b ../..\nf a/b/outside/secret - x",
		"f x - 1\nl x ../outside\nf x/secret - 2",
	} {
		f.Add(s, "", false)
		f.Add(s, "etc", true)
	}
	f.Add("d /\nf /etc/hosts - h\nl /l ../outside\nf /l/secret - x\nh /h /etc/hosts", "/", false)
	f.Fuzz(func(t *testing.T, script, top string, single bool) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for i, line := range strings.Split(script, "\n") {
			if i >= 64 { // enough entries for any chain of links
				break
			}
			fs := strings.SplitN(line, " ", 4)
			for len(fs) < 4 {
				fs = append(fs, "")
			}
			h := &tar.Header{Name: fs[1], Linkname: fs[2], Mode: 0o755}
			switch fs[0] {
			case "f":
				h.Typeflag, h.Size, h.Linkname = tar.TypeReg, int64(len(fs[3])), ""
			case "d":
				h.Typeflag = tar.TypeDir
			case "l":
				h.Typeflag = tar.TypeSymlink
			case "h":
				h.Typeflag = tar.TypeLink
			case "c":
				h.Typeflag = tar.TypeChar
			default:
				continue
			}
			if tw.WriteHeader(h) != nil {
				return // a header tar cannot write: nothing to test
			}
			if h.Typeflag == tar.TypeReg {
				_, _ = tw.Write([]byte(fs[3]))
			}
		}
		_ = tw.Close()
		parent, dest := sandbox(t)
		opts := Options{Single: single}
		switch {
		case top == "/":
			opts.Top = "/"
		case top != "" && !strings.ContainsAny(top, "/\x00") && top != "." && top != "..":
			opts.Top, opts.NewTop = top, "renamed"
		}
		_, _ = Extract(context.Background(), &buf, dest, opts)
		assertContained(t, parent)
	})
}

package integration

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"time"

	"gopkg.in/check.v1"
)

type tarEntry struct {
	name     string
	body     string
	link     string
	symlink  bool
	hardlink bool
}

func makeTar(c *check.C, entries []tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, ModTime: time.Unix(1700000000, 0)}
		switch {
		case e.symlink:
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, e.link, 0o777
		case e.hardlink:
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, e.link
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.body))
		}
		c.Assert(tw.WriteHeader(hdr), check.IsNil)
		if hdr.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte(e.body))
			c.Assert(err, check.IsNil)
		}
	}
	c.Assert(tw.Close(), check.IsNil)
	return buf.Bytes()
}

// tarEntries reads the regular files of a tar, so a test can append hostile
// entries to a real image archive.
func tarEntries(c *check.C, b []byte) []tarEntry {
	tr := tar.NewReader(bytes.NewReader(b))
	var out []tarEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		c.Assert(err, check.IsNil)
		if h.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(tr)
		c.Assert(err, check.IsNil)
		out = append(out, tarEntry{name: h.Name, body: string(body)})
	}
}

func tarNames(c *check.C, b []byte) []string {
	tr := tar.NewReader(bytes.NewReader(b))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		c.Assert(err, check.IsNil)
		names = append(names, h.Name)
	}
	return names
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

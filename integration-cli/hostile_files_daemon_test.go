package integration

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"gopkg.in/check.v1"
)

// hostileArchives are archives a compromised or buggy daemon could send
// for `wharf cp IMAGE:/d DEST`: each tries one way out of DEST. The
// extractor must refuse each, or keep what it writes under DEST.
func hostileArchives(outside string) map[string][]tarEntryH {
	return map[string][]tarEntryH{
		"dotdot":          {{name: "d/", dir: true}, {name: "d/../../escaped", body: "x"}},
		"leading-dotdot":  {{name: "d/", dir: true}, {name: "../escaped", body: "x"}},
		"absolute":        {{name: "d/", dir: true}, {name: outside + "/abs-escaped", body: "x"}},
		"symlink-abs":     {{name: "d/", dir: true}, {name: "d/link", link: outside, symlink: true}, {name: "d/link/pwned", body: "x"}},
		"symlink-rel":     {{name: "d/", dir: true}, {name: "d/rel", link: "../../outside", symlink: true}, {name: "d/rel/pwned", body: "x"}},
		"symlink-replace": {{name: "d/", dir: true}, {name: "d/x", body: "first"}, {name: "d/x", link: outside + "/host-secret", symlink: true}, {name: "d/x", body: "overwrite"}},
		"hardlink-out":    {{name: "d/", dir: true}, {name: "d/h", link: outside + "/host-secret", hardlink: true}},
		"hardlink-rel":    {{name: "d/", dir: true}, {name: "d/h", link: "../outside/host-secret", hardlink: true}},
		"outside-top":     {{name: "d/", dir: true}, {name: "e/other", body: "x"}},
	}
}

type tarEntryH struct {
	name, body, link       string
	dir, symlink, hardlink bool
}

func hostileTar(c *check.C, ents []tarEntryH) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Mode: 0o644, ModTime: corpusMtime, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		switch {
		case e.dir:
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case e.symlink:
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		case e.hardlink:
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, e.link, 0
		}
		c.Assert(tw.WriteHeader(h), check.IsNil)
		if h.Size > 0 {
			_, err := tw.Write([]byte(e.body))
			c.Assert(err, check.IsNil)
		}
	}
	c.Assert(tw.Close(), check.IsNil)
	return buf.Bytes()
}

// fakeDaemon answers the wharf CLI on a unix socket as a hostile wharfd
// would: /_ping as the real one, the archive of IMAGE:/d as archives[IMAGE's
// repository], anything else an empty JSON object.
func fakeDaemon(c *check.C, archives map[string][]byte) (host string, closeFn func()) {
	sock := filepath.Join(c.MkDir(), "fake.sock")
	l, err := net.Listen("unix", sock)
	c.Assert(err, check.IsNil)
	st, err := json.Marshal(container.PathStat{Name: "d", Mode: fs.ModeDir | 0o755, Mtime: corpusMtime})
	c.Assert(err, check.IsNil)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/_ping":
			w.Header().Set("API-Version", "1.55")
			w.Write([]byte("OK"))
		case strings.HasSuffix(r.URL.Path, "/archive"):
			for name, b := range archives {
				if strings.Contains(r.URL.Path, "/hostile/"+name+":") {
					w.Header().Set("X-Docker-Container-Path-Stat", base64.StdEncoding.EncodeToString(st))
					w.Header().Set("Content-Type", "application/x-tar")
					w.Write(b)
					return
				}
			}
			http.NotFound(w, r)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("{}"))
		}
	})}
	go srv.Serve(l)
	return "unix://" + sock, func() { srv.Close() }
}

// The extractor of `wharf cp` against a daemon that sends hostile
// archives: every way out of DEST (.., absolute names, a symlink then a
// file through it, a symlink over a written file, hardlinks to files it
// did not write, entries outside the copied path) is refused, and nothing
// is written outside DEST.
func (s *HostileFilesSuite) TestCopyFromHostileArchiveStaysInDest(c *check.C) {
	sb := newSandbox(c)
	secret := filepath.Join(sb.outside, "host-secret")
	c.Assert(os.WriteFile(secret, []byte("HOST SECRET"), 0o600), check.IsNil)
	cases := hostileArchives(sb.outside)
	archives := map[string][]byte{}
	for name, ents := range cases {
		archives[name] = hostileTar(c, ents)
	}
	host, closeFn := fakeDaemon(c, archives)
	defer closeFn()
	for _, name := range sortedKeys(cases) {
		dest := filepath.Join(sb.dest, name)
		c.Assert(os.Mkdir(dest, 0o755), check.IsNil)
		r := runCmd(c, nil, s.d.cliEnv(), bins.Wharf, "-H", host, "cp", "127.0.0.1:1/hostile/"+name+":1:/d", dest)
		c.Logf("%s: exit %d: %s", name, r.ExitCode, firstLine(r.Stderr))
		c.Assert(sb.escapes(c), check.DeepEquals, []string{secret}, check.Commentf("%s wrote outside DEST", name))
		c.Assert(readFile(secret), check.Equals, "HOST SECRET", check.Commentf("%s changed a file outside DEST", name))
		if name == "symlink-replace" {
			// A later entry replaces an earlier one of the same name, as
			// tar extracts: legal when the link is replaced, not followed.
			fi, err := os.Lstat(filepath.Join(dest, "d", "x"))
			c.Assert(err, check.IsNil)
			c.Assert(fi.Mode().IsRegular(), check.Equals, true, check.Commentf("%s: %v", name, fi.Mode()))
			c.Assert(readFile(filepath.Join(dest, "d", "x")), check.Equals, "overwrite")
			continue
		}
		c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s: a hostile archive was extracted without error\n%s", name, r))
	}
}

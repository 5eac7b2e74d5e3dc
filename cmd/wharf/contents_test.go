package main

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/wharfproject/wharf/api/types"
)

const layerA = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var testEntries = []types.FileEntry{
	{Path: "/etc", Type: "dir", Mode: uint32(fs.ModeDir | 0o755), ModTime: "2024-03-01T10:20:00Z", Layer: layerA},
	{Path: "/etc/hosts", Type: "file", Mode: 0o644, Size: 21, ModTime: "2024-03-01T10:20:00Z", Layer: layerA},
	{Path: "/etc/os-release", Type: "symlink", Mode: uint32(fs.ModeSymlink | 0o777), Linkname: "../usr/lib/os-release", ModTime: "2024-03-01T10:20:00Z", Layer: layerA},
	{Path: "/etc/su", Type: "file", Mode: uint32(fs.ModeSetuid | 0o755), Uid: 0, Gid: 0, Size: 3, ModTime: "2024-03-01T10:20:00Z"},
}

// contentsDaemon answers files with testEntries and archive with a tar
// of one file (or a symlink's stat for /etc/os-release).
func contentsDaemon(t *testing.T) *fakeDaemon {
	return newFakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1.55/info":
			writeJSON(w, 200, searchInfo)
		case strings.HasSuffix(r.URL.Path, "/files"):
			w.Header().Set("Content-Type", "application/x-ndjson")
			for _, e := range testEntries {
				b, _ := json.Marshal(e)
				_, _ = w.Write(append(b, '\n'))
			}
		case strings.HasSuffix(r.URL.Path, "/archive"):
			p := r.URL.Query().Get("path")
			st := container.PathStat{Name: filepath.Base(p), Mode: 0o644, Size: 5, Mtime: time.Unix(1_700_000_000, 0)}
			switch p {
			case "/etc/os-release":
				st.Mode, st.LinkTarget = fs.ModeSymlink|0o777, "/usr/lib/os-release"
			case "/etc":
				st.Mode = fs.ModeDir | 0o755
			case "/missing":
				writeJSON(w, 404, `{"message":"lstat /missing: not found"}`)
				return
			}
			b, _ := json.Marshal(st)
			w.Header().Set("X-Docker-Container-Path-Stat", base64.StdEncoding.EncodeToString(b))
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			if st.Mode.IsDir() {
				_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755})
				_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/hosts", Mode: 0o644, Size: 5})
				_, _ = tw.Write([]byte("hosts"))
			} else {
				_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: st.Name, Mode: 0o644, Size: 5})
				_, _ = tw.Write([]byte("bytes"))
			}
			_ = tw.Close()
			w.Header().Set("Content-Type", "application/x-tar")
			_, _ = w.Write(buf.Bytes())
		default:
			writeJSON(w, 404, `{"message":"page not found"}`)
		}
	})
}

func TestLsOutputs(t *testing.T) {
	d := contentsDaemon(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"app:1", "/"}, "etc\nhosts\nos-release\nsu\n"},
		{[]string{"-R", "app:1", "/"}, "/etc\n/etc/hosts\n/etc/os-release\n/etc/su\n"},
		{[]string{"-l", "app:1", "/"}, "drwxr-xr-x     0     0          0 2024-03-01 10:20 etc\n" +
			"-rw-r--r--     0     0         21 2024-03-01 10:20 hosts\n" +
			"lrwxrwxrwx     0     0          0 2024-03-01 10:20 os-release -> ../usr/lib/os-release\n" +
			"-rwsr-xr-x     0     0          3 2024-03-01 10:20 su\n"},
		{[]string{"--layers", "app:1"}, "0123456789ab etc\n0123456789ab hosts\n0123456789ab os-release\n------------ su\n"},
	}
	for _, tc := range tests {
		res := runCLI(t, testEnv(t), "", append([]string{"-H", d.host(), "ls"}, tc.args...)...)
		if res.code != 0 || res.stdout != tc.want {
			t.Errorf("ls %v: code %d\n%s\nwant\n%s\nstderr %s", tc.args, res.code, res.stdout, tc.want, res.stderr)
		}
	}
	// --format json prints the daemon's lines unchanged.
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "ls", "--format", "json", "--remote", "-R", "--layers", "--platform", "linux/arm64", "app:1", "/etc")
	b, _ := json.Marshal(testEntries[0])
	if res.code != 0 || !strings.HasPrefix(res.stdout, string(b)+"\n") || strings.Count(res.stdout, "\n") != len(testEntries) {
		t.Errorf("json: %d %q", res.code, res.stdout)
	}
	q := d.apiRequests()[len(d.apiRequests())-1].URL.Query()
	if q.Get("path") != "/etc" || q.Get("remote") != "1" || q.Get("recursive") != "1" || q.Get("layers") != "1" || !strings.Contains(q.Get("platform"), "arm64") {
		t.Errorf("query %v", q)
	}
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "ls", "--format", "yaml", "app:1"); res.code != 1 || !strings.Contains(res.stderr, "want json") {
		t.Errorf("bad format: %d %s", res.code, res.stderr)
	}
}

func TestCatFollowsSymlinkAndRefusesDirectory(t *testing.T) {
	d := contentsDaemon(t)
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "cat", "app:1", "/etc/os-release")
	if res.code != 0 || res.stdout != "bytes" {
		t.Fatalf("cat: %d %q %s", res.code, res.stdout, res.stderr)
	}
	var got []string
	for _, r := range d.apiRequests() {
		got = append(got, r.URL.Query().Get("path"))
	}
	if strings.Join(got, ",") != "/etc/os-release,/usr/lib/os-release" {
		t.Errorf("paths asked %v", got)
	}
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "cat", "app:1", "/etc"); res.code != 1 || !strings.Contains(res.stderr, "is a directory") {
		t.Errorf("dir: %d %s", res.code, res.stderr)
	}
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "cat", "app:1", "/missing"); res.code != 1 || !strings.Contains(res.stderr, "lstat /missing") {
		t.Errorf("missing: %d %s", res.code, res.stderr)
	}
}

func TestCp(t *testing.T) {
	d := contentsDaemon(t)
	dir := t.TempDir()
	// A file into an existing directory, then to a new name.
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "cp", "localhost:5000/app:1:/etc/hosts", dir); res.code != 0 {
		t.Fatalf("cp: %d %s", res.code, res.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "hosts")); string(b) != "bytes" {
		t.Errorf("hosts %q", b)
	}
	if q := d.apiRequests()[0].URL; q.Query().Get("path") != "/etc/hosts" || !strings.Contains(q.Path, "/wharf/images/localhost:5000/app:1/archive") {
		t.Errorf("asked %s", q)
	}
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "cp", "app:1:/etc/hosts", filepath.Join(dir, "renamed")); res.code != 0 {
		t.Fatalf("cp: %d %s", res.code, res.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "renamed")); string(b) != "bytes" {
		t.Errorf("renamed %q", b)
	}
	// A directory to a new name becomes it.
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "cp", "app:1:/etc", filepath.Join(dir, "newetc")); res.code != 0 {
		t.Fatalf("cp dir: %d %s", res.code, res.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "newetc", "hosts")); string(b) != "hosts" {
		t.Errorf("newetc/hosts %q", b)
	}
	// - is the tar itself.
	res := runCLI(t, testEnv(t), "", "-H", d.host(), "cp", "app:1:/etc", "-")
	tr := tar.NewReader(strings.NewReader(res.stdout))
	if h, err := tr.Next(); res.code != 0 || err != nil || h.Name != "etc/" {
		t.Errorf("cp -: %d %v %v", res.code, h, err)
	}
	if res := runCLI(t, testEnv(t), "", "-H", d.host(), "cp", "app:1", dir); res.code != 1 || !strings.Contains(res.stderr, "IMAGE:PATH") {
		t.Errorf("no path: %d %s", res.code, res.stderr)
	}
}

func TestSplitImagePath(t *testing.T) {
	tests := []struct{ in, name, path string }{
		{"alpine:/etc", "alpine", "/etc"},
		{"alpine:3.20:/etc/os-release", "alpine:3.20", "/etc/os-release"},
		{"localhost:5000/team/app:1:/", "localhost:5000/team/app:1", "/"},
		{"app@sha256:abcd:/a:/b", "app@sha256:abcd", "/a:/b"},
		{"app:etc", "", ""},
		{":/etc", "", ""},
	}
	for _, tc := range tests {
		n, p, err := splitImagePath(tc.in)
		if n != tc.name || p != tc.path || (err != nil) != (tc.name == "") {
			t.Errorf("%q: %q %q %v", tc.in, n, p, err)
		}
	}
}

func TestLsMode(t *testing.T) {
	tests := []struct {
		typ  string
		mode fs.FileMode
		want string
	}{
		{"file", 0o644, "-rw-r--r--"},
		{"dir", fs.ModeDir | 0o1777 | fs.ModeSticky, "drwxrwxrwt"},
		{"file", fs.ModeSetuid | fs.ModeSetgid | 0o644, "-rwSr-Sr--"},
		{"symlink", fs.ModeSymlink | 0o777, "lrwxrwxrwx"},
		{"char", fs.ModeDevice | fs.ModeCharDevice | 0o666, "crw-rw-rw-"},
		{"fifo", fs.ModeNamedPipe | 0o600, "prw-------"},
		{"hardlink", 0o755, "-rwxr-xr-x"},
	}
	for _, tc := range tests {
		if got := lsMode(types.FileEntry{Type: tc.typ, Mode: uint32(tc.mode)}); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.typ, tc.mode, got, tc.want)
		}
	}
}

func TestPlanCopy(t *testing.T) {
	dir := t.TempDir()
	existingDir := filepath.Join(dir, "d")
	existingFile := filepath.Join(dir, "f")
	if err := os.Mkdir(existingDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(existingFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dirStat := container.PathStat{Name: "etc", Mode: fs.ModeDir | 0o755}
	fileStat := container.PathStat{Name: "hosts", Mode: 0o644}
	rootStat := container.PathStat{Name: "/", Mode: fs.ModeDir | 0o755}
	tests := []struct {
		name      string
		st        container.PathStat
		src, dest string
		wantDir   string
		wantTop   string
		wantNew   string
		single    bool
		wantErr   string
	}{
		{"dir into existing dir", dirStat, "/etc", existingDir, existingDir, "etc", "etc", false, ""},
		{"dir to new name", dirStat, "/etc", filepath.Join(dir, "new"), filepath.Join(dir, "new"), "etc", "", false, ""},
		{"dir contents into existing dir", dirStat, "/etc/.", existingDir, existingDir, "etc", "", false, ""},
		{"root into new dir", rootStat, "/", filepath.Join(dir, "root"), filepath.Join(dir, "root"), "/", "", false, ""},
		{"file into existing dir", fileStat, "/etc/hosts", existingDir, existingDir, "hosts", "hosts", false, ""},
		{"file to new name", fileStat, "/etc/hosts", filepath.Join(dir, "h2"), dir + "/", "hosts", "h2", true, ""},
		{"file over existing file", fileStat, "/etc/hosts", existingFile, dir + "/", "hosts", "f", true, ""},
		{"dir onto a file", dirStat, "/etc", existingFile, "", "", "", false, "cannot copy directory"},
		{"file into missing dir", fileStat, "/etc/hosts", filepath.Join(dir, "nope") + "/", "", "", "", false, "does not exist"},
		{"file under missing parent", fileStat, "/etc/hosts", filepath.Join(dir, "nope", "h"), "", "", "", false, "does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planCopy(tc.st, tc.src, tc.dest)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.dir != tc.wantDir || p.opts.Top != tc.wantTop || p.opts.NewTop != tc.wantNew || p.opts.Single != tc.single {
				t.Errorf("plan %+v", p)
			}
		})
	}
}

//go:build bench

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// Case 9: the flaky link, side by side. A CutProxy
// (internal/hostile) in front of the real registry (anonymous, plain HTTP,
// so every client pulls without credentials) cuts the first GET(s) of each
// blob after cutAfter bytes of body; for 1, 3 and 5 cuts per blob, and
// through a registry that ignores Range (1 cut), each client pulls a fresh
// 3-layer image of random bytes (8 MiB a layer; 2 MiB with BENCH_QUICK) from
// a new repository, so that none has any of its blobs. For each client the
// row says whether it pulled (or the first line of its error) and the blob
// bytes the proxy passed on ÷ the image's size. The clients: wharf (a fresh
// wharfd per pull), dockerd 20.10 (Debian's docker.io, when installed and
// the bench runs as root; the bench starts its own on temp dirs), `crane
// pull` and `skopeo copy … oci:`. Only wharf's rows have targets (those of
// integration-cli's TestPullThroughCuts); the others are reported.

const flakyLayers = 3

// flakyColumn is one column of the flaky-link table.
type flakyColumn struct {
	title       string // the markdown column
	name        string // the row name's part
	cuts        int
	ignoreRange bool
}

var flakyColumns = []flakyColumn{
	{"1 cut", "1 cut per blob", 1, false},
	{"3 cuts", "3 cuts per blob", 3, false},
	{"5 cuts", "5 cuts per blob", 5, false},
	{"ignores Range", "registry ignores Range, 1 cut per blob", 1, true},
}

// flakyResult is one client's pull through one column.
type flakyResult struct {
	skipped string // reason; the pull did not run
	err     string // first line of the error; "" when it pulled
	bytes   int64  // blob body bytes passed by the proxy
	size    int64  // the image's size (its layers)
	gets    int    // blob GETs seen by the proxy
	ranged  int    // of which with a Range header
	took    time.Duration
}

func (r flakyResult) ratio() float64 {
	if r.size == 0 {
		return 0
	}
	return float64(r.bytes) / float64(r.size)
}

// flakyClient pulls ref (HOST/repo:tag); start prepares it once (a reason to
// skip it, or an error that fails the case), stop ends what start started.
type flakyClient struct {
	name  string
	skip  string
	pull  func(ctx context.Context, ref string) error
	close func()
}

func caseFlaky(ctx context.Context, root, wharfdBin string, quick bool) ([]row, error) {
	layerSize, cutAfter := 8<<20, int64(1<<20)
	if quick {
		layerSize, cutAfter = 2<<20, 256<<10
	}
	reg, err := testregistry.Start(testregistry.Options{})
	if err != nil {
		return nil, err
	}
	defer reg.Close()
	proxy, err := hostile.NewCutProxy(reg.DirectURL)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()

	clients := []*flakyClient{flakyWharf(wharfdBin)}
	dockerd, err := flakyDockerd(ctx, proxy.Host)
	if err != nil {
		return nil, err
	}
	clients = append(clients, dockerd)
	clients = append(clients, flakyCrane(ctx, root), flakySkopeo(ctx))
	defer func() {
		for _, c := range clients {
			if c.close != nil {
				c.close()
			}
		}
	}()

	results := map[string]map[int]flakyResult{}
	for _, c := range clients {
		results[c.name] = map[int]flakyResult{}
	}
	for col, fc := range flakyColumns {
		for ci, c := range clients {
			if c.skip != "" {
				results[c.name][col] = flakyResult{skipped: c.skip}
				continue
			}
			img, err := testregistry.NewImage(testregistry.ImageOptions{Layers: flakyLayers, LayerSize: layerSize})
			if err != nil {
				return nil, err
			}
			repo := fmt.Sprintf("flaky/c%d-%d", col, ci)
			if err := reg.Client().PushImage(ctx, repo, "1", img); err != nil {
				return nil, fmt.Errorf("push %s: %w", repo, err)
			}
			proxy.SetCuts(fc.cuts, cutAfter, fc.ignoreRange)
			pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			start := time.Now()
			err = c.pull(pctx, proxy.Host+"/"+repo+":1")
			took := time.Since(start)
			cancel()
			proxy.CloseClientConnections()
			r := flakyResult{bytes: proxy.BlobBytes.Load(), size: img.Size(), took: took}
			for _, rg := range proxy.Ranges() {
				r.gets++
				if rg != "" {
					r.ranged++
				}
			}
			if err != nil {
				r.err = firstLine(err.Error())
			}
			results[c.name][col] = r
		}
	}

	var rows []row
	for _, c := range clients {
		for col, fc := range flakyColumns {
			r := results[c.name][col]
			rw := row{Case: "9", Name: fmt.Sprintf("flaky link, %s — %s", fc.name, c.name), Unit: "× image", N: 1}
			switch {
			case r.skipped != "":
				rw.N = 0
				rw.Note = "skipped: " + r.skipped
			default:
				rw.Median = r.ratio()
				outcome := "pulls"
				if r.err != "" {
					outcome = "fails: " + r.err
				}
				rw.Note = fmt.Sprintf("%s; %d of %d bytes in %d blob GETs (%d with Range) in %.1fs",
					outcome, r.bytes, r.size, r.gets, r.ranged, r.took.Seconds())
			}
			if c.name == "wharf" && r.skipped == "" {
				limit := 1.10
				if fc.ignoreRange {
					// A 200 to the Range: each layer's first cutAfter bytes come twice.
					limit = 1 + float64(cutAfter*flakyLayers)/float64(r.size) + 0.02
				}
				rw.Target = fmt.Sprintf("pulls, ≤%.2f×", limit)
				rw.Pass = pass(r.err == "" && r.ratio() <= limit)
			}
			rows = append(rows, rw)
		}
	}
	fmt.Printf("\nCase 9, the flaky link: %d layers × %d MiB, each blob GET cut after %d KiB; blob bytes at the proxy ÷ image size\n\n",
		flakyLayers, layerSize>>20, cutAfter>>10)
	fmt.Print(flakyMarkdown(clients, results))
	return rows, nil
}

// flakyMarkdown is the flaky-link table: a row per client, a column per cut.
func flakyMarkdown(clients []*flakyClient, results map[string]map[int]flakyResult) string {
	var b strings.Builder
	b.WriteString("| client |")
	for _, fc := range flakyColumns {
		b.WriteString(" " + fc.title + " |")
	}
	b.WriteString("\n|---|")
	for range flakyColumns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, c := range clients {
		b.WriteString("| " + c.name + " |")
		for col := range flakyColumns {
			r := results[c.name][col]
			var cell string
			switch {
			case r.skipped != "":
				cell = "skipped"
			case r.err != "":
				e := r.err
				if len(e) > 90 {
					e = e[:90] + "…"
				}
				cell = fmt.Sprintf("fails: %s (%.2f×)", strings.ReplaceAll(e, "|", "/"), r.ratio())
			default:
				cell = fmt.Sprintf("pulls %.2f×", r.ratio())
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	for _, c := range clients {
		if c.skip != "" {
			fmt.Fprintf(&b, "\n%s skipped: %s\n", c.name, c.skip)
		}
	}
	return b.String()
}

// firstLine is the first non-empty line of s; for a logrus line (skopeo's
// `level=fatal msg="…"`) the message.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if i := strings.Index(l, ` msg="`); i >= 0 {
			if m, err := strconv.Unquote(l[i+5:]); err == nil {
				return m
			}
		}
		return l
	}
	return strings.TrimSpace(s)
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// flakyWharf pulls with a fresh wharfd on a temp data-root each time, through
// its API (POST /images/create). The proxy is on 127.0.0.1, insecure for
// wharfd by default (registry/hosts: loopback is always insecure).
func flakyWharf(bin string) *flakyClient {
	return &flakyClient{name: "wharf", pull: func(ctx context.Context, ref string) error {
		root, err := os.MkdirTemp("", "wharf-bench-root-")
		if err != nil {
			return err
		}
		d, err := startWharfd(bin, root)
		if err != nil {
			os.RemoveAll(root)
			return err
		}
		defer dropDaemon(d, root)
		i := strings.LastIndexByte(ref, ':') // HOST:PORT/repo:tag
		name, tag := ref[:i], ref[i+1:]
		q := url.Values{"fromImage": {name}, "tag": {tag}}
		_, err = d.stream(ctx, "pull "+ref, "/v1.50/images/create?"+q.Encode(), nil, func(line []byte) error {
			if m := jsonError(line); m != "" {
				return errors.New(m)
			}
			return nil
		})
		return err
	}}
}

// jsonError is the "error" of one line of a pull's progress stream.
func jsonError(line []byte) string {
	const key = `"error":`
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return ""
	}
	rest := bytes.TrimSpace(line[i+len(key):])
	if len(rest) == 0 || rest[0] != '"' {
		return ""
	}
	// The value is a JSON string: find its closing quote.
	for j := 1; j < len(rest); j++ {
		switch rest[j] {
		case '\\':
			j++
		case '"':
			if s, err := strconv.Unquote(string(rest[:j+1])); err == nil {
				return s
			}
			return string(rest[1:j])
		}
	}
	return ""
}

// flakyCrane is `crane pull --insecure --format=oci REF DIR` into a fresh directory.
func flakyCrane(ctx context.Context, root string) *flakyClient {
	c := &flakyClient{name: "crane"}
	bin, err := craneBin(ctx, root)
	if err != nil {
		c.skip = "crane unavailable: " + firstLine(err.Error())
		return c
	}
	c.pull = func(ctx context.Context, ref string) error {
		return runInTemp(ctx, bin, func(dir string) []string {
			return []string{"pull", "--insecure", "--format=oci", ref, dir}
		})
	}
	return c
}

// flakySkopeo is `skopeo copy --src-tls-verify=false docker://REF oci:DIR`.
func flakySkopeo(ctx context.Context) *flakyClient {
	c := &flakyClient{name: "skopeo"}
	bin, err := skopeoBin(ctx)
	if err != nil {
		c.skip = "skopeo unavailable: " + firstLine(err.Error())
		return c
	}
	c.pull = func(ctx context.Context, ref string) error {
		return runInTemp(ctx, bin, func(dir string) []string {
			return []string{"copy", "--quiet", "--src-tls-verify=false", "docker://" + ref, "oci:" + dir + ":1"}
		})
	}
	return c
}

// runInTemp runs bin with args(DIR) for a DIR in a new temp directory,
// removed afterwards; a failure's error is the tool's stderr.
func runInTemp(ctx context.Context, bin string, args func(dir string) []string) error {
	parent, err := os.MkdirTemp("", "wharf-bench-flaky-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(parent)
	cmd := exec.CommandContext(ctx, bin, args(filepath.Join(parent, "layout"))...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+parent) // no credentials of the machine's user
	return runStderr(cmd)
}

// runStderr runs cmd; a failure's error is its stderr when it said anything.
func runStderr(cmd *exec.Cmd) error {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if s := strings.TrimSpace(stderr.String()); s != "" {
			return errors.New(s)
		}
		return err
	}
	return nil
}

// flakyDockerd starts the bench's own dockerd 20.10 (when installed, and
// when the bench runs as root) on temp dirs, with the proxy as an insecure
// registry, and pulls with the docker CLI through its socket. A dockerd
// that is missing, or cannot run here, gives a client that is skipped with
// the reason; a pull that fails is a "fails" cell, like any client's.
func flakyDockerd(ctx context.Context, proxyHost string) (*flakyClient, error) {
	c := &flakyClient{name: "dockerd 20.10"}
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		c.skip = "dockerd not installed (apt-get install docker.io)"
		return c, nil
	}
	if os.Geteuid() != 0 {
		c.skip = fmt.Sprintf("dockerd needs root (the bench runs as uid %d)", os.Geteuid())
		return c, nil
	}
	// The CLI of the same package (/usr/bin/docker beside /usr/sbin/dockerd
	// in Debian's docker.io) when there is one; else any docker on PATH
	// (the API version is negotiated).
	cli := filepath.Join(filepath.Dir(filepath.Dir(bin)), "bin", "docker")
	if _, err := os.Stat(cli); err != nil {
		if cli, err = exec.LookPath("docker"); err != nil {
			c.skip = "dockerd installed, but no docker CLI"
			return c, nil
		}
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		c.skip = "dockerd --version: " + err.Error()
		return c, nil
	}
	version := strings.TrimSpace(string(out))
	if !strings.Contains(version, "version 20.10.") {
		c.name = "dockerd " + strings.TrimPrefix(strings.SplitN(version, ",", 2)[0], "Docker version ")
	}
	tmp, err := os.MkdirTemp("", "wharf-bench-dockerd-")
	if err != nil {
		return nil, err
	}
	d := &dockerdProc{tmp: tmp, cli: cli, host: "unix://" + filepath.Join(tmp, "docker.sock")}
	if err := d.start(ctx, bin, proxyHost); err != nil {
		// Installed but unable to run here (no cgroups, a sandbox …): its
		// rows say why, and wharf's rows are still measured.
		d.stop()
		c.skip = "dockerd did not start: " + firstLine(err.Error())
		return c, nil
	}
	c.close = d.stop
	c.pull = d.pull
	return c, nil
}

// dockerdProc is the bench's own dockerd and the containerd it starts.
type dockerdProc struct {
	tmp, cli, host string
	cmd            *exec.Cmd
	done           chan struct{}
}

func (d *dockerdProc) logTail() string {
	b, _ := os.ReadFile(filepath.Join(d.tmp, "dockerd.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func (d *dockerdProc) start(ctx context.Context, bin, proxyHost string) error {
	logf, err := os.Create(filepath.Join(d.tmp, "dockerd.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	d.cmd = exec.Command(bin,
		"--data-root", filepath.Join(d.tmp, "root"),
		"--exec-root", filepath.Join(d.tmp, "exec"),
		"--pidfile", filepath.Join(d.tmp, "pid"),
		"-H", d.host,
		"--storage-driver", "vfs",
		"--iptables=false", "--ip6tables=false", "--bridge=none",
		"--insecure-registry", proxyHost)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	d.cmd.Env = append(os.Environ(), "HOME="+d.tmp)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		return fmt.Errorf("start dockerd: %w", err)
	}
	d.done = make(chan struct{})
	go func() { d.cmd.Wait(); close(d.done) }()
	// Ready when the CLI gets the daemon's version through the socket.
	deadline := time.Now().Add(60 * time.Second)
	for {
		vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := d.docker(vctx, "version", "--format", "{{.Server.Version}}")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-d.done:
			tail := d.logTail()
			return fmt.Errorf("dockerd exited: %s\n%s", lastLine(tail), tail)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dockerd did not answer `docker version` in 60s: %s\n%s", firstLine(err.Error()), d.logTail())
		}
	}
}

// docker runs the CLI against the bench's dockerd; a failure's error is its stderr.
func (d *dockerdProc) docker(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, d.cli, append([]string{"-H", d.host}, args...)...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+filepath.Join(d.tmp, "cli"), "DOCKER_HOST=")
	return runStderr(cmd)
}

func (d *dockerdProc) pull(ctx context.Context, ref string) error {
	return d.docker(ctx, "pull", "--quiet", ref)
}

// stop ends dockerd (SIGTERM, SIGKILL after 30 s), then the containerd it
// started under its exec-root if that outlived it, and removes the temp dirs.
func (d *dockerdProc) stop() {
	pidFile := filepath.Join(d.tmp, "exec", "containerd", "containerd.pid")
	containerd := 0
	if b, err := os.ReadFile(pidFile); err == nil {
		containerd, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if d.cmd != nil && d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(30 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	}
	if containerd > 0 && processIs(containerd, "containerd") {
		_ = syscall.Kill(containerd, syscall.SIGTERM)
		for i := 0; i < 100 && processIs(containerd, "containerd"); i++ {
			time.Sleep(50 * time.Millisecond) // waiting for a process we cannot wait(2) for
		}
		if processIs(containerd, "containerd") {
			_ = syscall.Kill(containerd, syscall.SIGKILL)
		}
	}
	// vfs leaves read-only directories (the layers' own modes).
	_ = filepath.WalkDir(d.tmp, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(d.tmp)
}

// processIs reports whether pid is alive (not a zombie) and named name.
func processIs(pid int, name string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "PID (comm) S …"
	s := string(b)
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i || len(s) < j+3 {
		return false
	}
	return s[i+1:j] == name && s[j+2] != 'Z'
}

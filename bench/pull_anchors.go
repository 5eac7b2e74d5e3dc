//go:build bench

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The pull anchors of case 3: the same image pulled by crane and
// by skopeo into an OCI layout on the data-root's file system, each timed as
// a user would see it (the process from start to exit). Neither is a daemon:
// crane writes each blob to a temp file and renames it without fsync, so its
// time is download + sha256 + write to the page cache; skopeo (containers/
// image's oci transport) fsyncs each blob. wharf must verify and fsync every
// blob and its directory before the image is recorded.

type pullAnchors struct {
	crane, skopeo string // binaries; "" when unavailable
	craneHost     string // host:port crane pulls from (see craneFront)
	dockerConfig  string // DOCKER_CONFIG dir holding the registry's credentials for crane
	user, pass    string
	cleanup       func()
}

// craneFront is crane's way to the registry: an RTT proxy (at 0) in front of
// a reverse proxy in front of the registry, the same hops as wharfd's (RTT
// proxy, then testregistry's counting reverse proxy). It differs in one
// thing: the challenge's realm names the token proxy as localhost instead of
// 127.0.0.1, because crane (go-containerregistry ≥ 0.21) refuses a bearer
// realm that is a loopback or private IP literal on another port than the
// registry's. It returns the front's host:port and a close function.
func craneFront(e *env) (string, func(), error) {
	u, err := url.Parse(e.reg.DirectURL)
	if err != nil {
		return "", nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // stream blobs as they come, as the Counter does
	rp.ModifyResponse = func(resp *http.Response) error {
		if c := resp.Header.Get("WWW-Authenticate"); c != "" {
			resp.Header.Set("WWW-Authenticate", strings.Replace(c, `realm="http://127.0.0.1:`, `realm="http://localhost:`, 1))
		}
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: rp}
	go srv.Serve(ln)
	p, err := newRTTProxy(0, false)
	if err != nil {
		srv.Close()
		return "", nil, err
	}
	p.setTarget(ln.Addr().String())
	return p.Addr(), func() { p.Close(); srv.Close() }, nil
}

func newPullAnchors(ctx context.Context, e *env) (*pullAnchors, []string) {
	a := &pullAnchors{user: e.reg.Username, pass: e.reg.Password, cleanup: func() {}}
	var notes []string
	if root, err := moduleRoot(); err != nil {
		notes = append(notes, "crane: "+err.Error())
	} else if a.crane, err = craneBin(ctx, root); err != nil {
		notes = append(notes, "crane unavailable: "+err.Error())
		a.crane = ""
	}
	if p, err := skopeoBin(ctx); err != nil {
		notes = append(notes, "skopeo unavailable: "+err.Error())
	} else {
		a.skopeo = p
	}
	if a.crane == "" {
		return a, notes
	}
	host, closeFront, err := craneFront(e)
	if err != nil {
		notes = append(notes, "crane front: "+err.Error())
		a.crane = ""
		return a, notes
	}
	a.craneHost = host
	dir, err := os.MkdirTemp("", "wharf-bench-dockercfg-")
	if err != nil {
		closeFront()
		notes = append(notes, err.Error())
		a.crane = ""
		return a, notes
	}
	a.dockerConfig = dir
	a.cleanup = func() { closeFront(); os.RemoveAll(dir) }
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{
		host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(a.user + ":" + a.pass))},
	}})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		notes = append(notes, err.Error())
		a.crane = ""
	}
	return a, notes
}

// cranePull is `crane pull --format=oci --insecure HOST/bench/big:1 DIR`
// into a fresh directory, timed.
func (a *pullAnchors) cranePull(ctx context.Context, e *env) (time.Duration, time.Duration, error) {
	return a.run(ctx, a.crane, []string{"DOCKER_CONFIG=" + a.dockerConfig}, func(dir string) []string {
		return []string{"pull", "--format=oci", "--insecure", a.craneHost + "/bench/big:1", dir}
	})
}

// skopeoCopy is `skopeo copy docker://HOST/bench/big:1 oci:DIR:1` with the
// credentials on the command line, timed.
func (a *pullAnchors) skopeoCopy(ctx context.Context, e *env) (time.Duration, time.Duration, error) {
	return a.run(ctx, a.skopeo, nil, func(dir string) []string {
		return []string{"copy", "--quiet", "--src-tls-verify=false", "--src-creds", a.user + ":" + a.pass,
			"docker://" + e.host + "/bench/big:1", "oci:" + dir + ":1"}
	})
}

// run times the anchor's process, and returns its wall and CPU time.
func (a *pullAnchors) run(ctx context.Context, bin string, env []string, args func(dir string) []string) (time.Duration, time.Duration, error) {
	parent, err := os.MkdirTemp("", "wharf-bench-anchor-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(parent)
	dir := filepath.Join(parent, "layout")
	cmd := exec.CommandContext(ctx, bin, args(dir)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args(dir), " "), err, strings.TrimSpace(out.String()))
	}
	return took, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

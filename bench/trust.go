//go:build bench

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// Case 10: the cost of verifying. Images signed by the real
// cosign (a key pair, no transparency log, the bundle format) are pushed
// to the bench's token registry behind its counters and RTT proxy; a
// wharfd with a sigstoreSigned policy for <registry>/trust and a wharfd
// without a policy (the unverified baseline) inspect them remotely.

// trustPolicy is the signature policy of the verifying daemons: the
// repositories under host/trust need a signature by pub.
func trustPolicy(host, pub string) string {
	return fmt.Sprintf(`{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{%q:[{"type":"sigstoreSigned","keyPath":%q,"signedIdentity":{"type":"matchRepository"}}]}}}`,
		host+"/trust", pub)
}

// trustDaemon is a wharfd of case 10 on a fresh data-root, with the
// policy when policy is not "", and its metrics endpoint.
type trustDaemon struct {
	*wharfd
	root    string
	metrics string // http://127.0.0.1:PORT/metrics
}

func startTrustDaemon(e *env, policy string) (*trustDaemon, error) {
	root, err := os.MkdirTemp("", "wharf-bench-root-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"--metrics-addr", addr}
	if policy != "" {
		args = append(args, "--signature-policy", policy)
	}
	d, err := startWharfd(e.wharfd, root, args...)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return &trustDaemon{wharfd: d, root: root, metrics: "http://" + addr + "/metrics"}, nil
}

func (d *trustDaemon) drop() { dropDaemon(d.wharfd, d.root) }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// scrapeCounter reads one unlabelled sample (name, or name{labels}) from
// the daemon's /metrics.
func (d *trustDaemon) scrapeCounter(ctx context.Context, series string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.metrics, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s not in the scrape of %s", series, d.metrics)
}

// inspectTrust is a remote inspect through d; it returns the time, the
// verdict's decision ("" without one) and checks the image ID.
func (e *env) inspectTrust(ctx context.Context, d *wharfd, name, wantID string) (time.Duration, string, error) {
	start := time.Now()
	status, body, err := d.do(ctx, http.MethodGet, "/v1.50/images/"+name+"/json?remote=1", map[string]string{"X-Registry-Auth": e.auth}, nil)
	el := time.Since(start)
	if err != nil {
		return 0, "", err
	}
	if status != http.StatusOK {
		return 0, "", fmt.Errorf("remote inspect %s: %d %s", name, status, body)
	}
	var m struct {
		Id    string
		Trust *struct{ Decision, Reason string }
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return 0, "", err
	}
	if m.Id != wantID {
		return 0, "", fmt.Errorf("remote inspect %s: Id %s, want %s", name, m.Id, wantID)
	}
	if m.Trust == nil {
		return el, "", nil
	}
	if m.Trust.Decision != "accepted" {
		return 0, "", fmt.Errorf("remote inspect %s: %s: %s", name, m.Trust.Decision, m.Trust.Reason)
	}
	return el, m.Trust.Decision, nil
}

// runCosign runs the real cosign without the user's config or keychain:
// HOME and DOCKER_CONFIG are dir (whose config.json holds the bench
// user's credentials), no password on the key, no prompt.
func runCosign(ctx context.Context, cosign, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, cosign, args...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "DOCKER_CONFIG="+dir, "COSIGN_PASSWORD=", "COSIGN_YES=true")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cosign %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// signedImage is an image pushed to repo:1 and signed by cosign.
type signedImage struct {
	repo string
	img  *testregistry.Image
}

func (s signedImage) name(e *env) string { return e.host + "/" + s.repo + ":1" }

// pushSigned pushes a new image to each repo and signs its digest with
// key through the RTT proxy (the env at RTT 0), 4 at a time.
func pushSigned(ctx context.Context, e *env, cosign, dir, key string, repos []string) ([]signedImage, error) {
	c := e.client()
	out := make([]signedImage, len(repos))
	for i, repo := range repos {
		img, err := testregistry.NewImage(testregistry.ImageOptions{Labels: map[string]string{"trust": repo}})
		if err != nil {
			return nil, err
		}
		if err := c.PushImage(ctx, repo, "1", img); err != nil {
			return nil, err
		}
		out[i] = signedImage{repo: repo, img: img}
	}
	errs := make([]error, len(out))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, s := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = runCosign(ctx, cosign, dir, "sign", "--key", key, "--tlog-upload=false", "--use-signing-config=false",
				"--allow-insecure-registry", "--allow-http-registry", "--new-bundle-format=true",
				e.host+"/"+s.repo+"@"+s.img.Manifest.Digest)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// signatureLookup reports whether a registry request (Counter's
// "METHOD /path") is part of the signature look-up of img rather than of
// the inspect itself: the referrers API, a tag of the tag schema
// (sha256-<hex>, sha256-<hex>.sig), or a manifest or blob that is not
// img's (the signature's manifest and its bundle layer).
func signatureLookup(req string, img *testregistry.Image) bool {
	_, path, _ := strings.Cut(req, " ")
	path, _, _ = strings.Cut(path, "?")
	if strings.Contains(path, "/referrers/") || strings.Contains(path, "/manifests/sha256-") {
		return true
	}
	i := strings.LastIndex(path, "/")
	last := path[i+1:]
	if !strings.HasPrefix(last, "sha256:") {
		return false
	}
	if last == img.Manifest.Digest || last == img.Config.Digest {
		return false
	}
	for _, l := range img.Layers {
		if last == l.Digest {
			return false
		}
	}
	return true
}

// shortRequest is "METHOD /path" with each digest cut to 12 hex digits.
func shortRequest(r string) string {
	for _, p := range []string{"sha256:", "sha256-"} {
		for i := 0; ; {
			j := strings.Index(r[i:], p)
			if j < 0 {
				break
			}
			j += i + len(p)
			if len(r) >= j+64 {
				r = r[:j+12] + "…" + r[j+64:]
			}
			i = j
		}
	}
	return r
}

// cpuTimeFine is the daemon's CPU time in nanoseconds: the sum of its
// threads' run times (/proc/PID/task/*/schedstat, first field). Go keeps
// its threads, so none of the time is lost with an exited one; /proc's
// stat (cpuTime) counts in 10 ms ticks, too coarse for a verification.
func cpuTimeFine(d *wharfd) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", d.cmd.Process.Pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no schedstat for %d: %v", d.cmd.Process.Pid, err)
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q", t, b)
		}
		sum += n
	}
	return time.Duration(sum), nil
}

// caseTrust is case 10.
func caseTrust(ctx context.Context, root, bin string, rtt time.Duration, quick bool) ([]row, error) {
	cosign := filepath.Join(root, ".cache", "bin", "cosign")
	if _, err := os.Stat(cosign); err != nil {
		return []row{{Case: "10", Name: "signature verification", Unit: "-",
			Note: "skipped: .cache/bin/cosign is missing (make cosign builds it)"}}, nil
	}
	coldIters, warmIters, cpuImages, cpuRounds := 9, 30, 16, 2
	if quick {
		coldIters, warmIters, cpuImages, cpuRounds = 2, 6, 4, 1
	}
	// The realm on "localhost": cosign (go-containerregistry, as crane)
	// refuses a realm on a loopback IP literal of another port.
	e, err := newEnvRealm(0, false, bin, "localhost")
	if err != nil {
		return nil, err
	}
	defer e.close()
	dir, err := os.MkdirTemp("", "wharf-bench-trust-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := writeDockerConfig(dir, e); err != nil {
		return nil, err
	}
	if err := runCosign(ctx, cosign, dir, "generate-key-pair", "--output-key-prefix", filepath.Join(dir, "signer")); err != nil {
		return nil, err
	}
	repos := []string{"trust/signed"}
	for i := 0; i < cpuImages; i++ {
		repos = append(repos, fmt.Sprintf("trust/cpu-%d", i))
	}
	imgs, err := pushSigned(ctx, e, cosign, dir, filepath.Join(dir, "signer.key"), repos)
	if err != nil {
		return nil, err
	}
	signed, cpuImgs := imgs[0], imgs[1:]
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(trustPolicy(e.host, filepath.Join(dir, "signer.pub"))), 0o600); err != nil {
		return nil, err
	}
	e.setRTT(rtt)
	e.reset()

	var rows []row
	for _, step := range []struct {
		name string
		run  func() ([]row, error)
	}{
		{"warm", func() ([]row, error) { return trustWarm(ctx, e, policy, signed, warmIters) }},
		{"cold", func() ([]row, error) { return trustCold(ctx, e, policy, signed, coldIters) }},
		{"64 concurrent", func() ([]row, error) { return trustConcurrent(ctx, e, policy, signed) }},
		{"CPU", func() ([]row, error) { return trustCPU(ctx, e, policy, cpuImgs, cpuRounds) }},
	} {
		r, err := step.run()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", step.name, err)
		}
		rows = append(rows, r...)
	}
	for i := range rows {
		rows[i].Name += fmt.Sprintf(", RTT %.0fms", ms(rtt))
	}
	return rows, nil
}

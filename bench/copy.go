//go:build bench

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// Case 7: registry → registry copy of the 8-layer image (8 × 32
// MiB, 4 MiB layers with BENCH_QUICK) between two real registries, each in
// token mode behind its own counting proxies and RTT proxy — the honest
// case: two repositories of one registry would let every tool mount instead
// of copying. wharf (POST /wharf/images/copy on a fresh daemon), `crane
// copy` and `skopeo copy docker://… docker://…` run in turns, each into a
// new destination registry (nothing to skip or mount), at RTT 0 and at the run's
// RTT. Requests are counted at both registries' proxies (registry/token,
// source + destination).
func caseCopy(ctx context.Context, root string, rtt time.Duration, iters int, quick bool, wharfdBin string) ([]row, error) {
	// The realm on "localhost": crane refuses one on a loopback IP literal
	// other than the registry's own host:port.
	src, err := newEnvRealm(0, false, wharfdBin, "localhost")
	if err != nil {
		return nil, err
	}
	defer src.close()
	size := 32 << 20
	if quick {
		size = 4 << 20
	}
	img, err := bigImage(8, size)
	if err != nil {
		return nil, err
	}
	if err := pushBig(ctx, src, img); err != nil {
		return nil, err
	}
	crane, err := craneBin(ctx, root)
	if err != nil {
		return nil, err
	}
	skopeo, err := skopeoBin(ctx)
	if err != nil {
		return nil, err
	}
	cfgDir, err := os.MkdirTemp("", "wharf-bench-docker-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(cfgDir)
	var total int64
	for _, l := range img.Layers {
		total += int64(len(l.Data))
	}
	mib := float64(total) / (1 << 20)

	rtts := []time.Duration{0}
	if rtt != 0 {
		rtts = append(rtts, rtt)
	}
	var rows []row
	n := 0
	for _, r := range rtts {
		src.setRTT(r)
		var walls, craneWalls, skopeoWalls []time.Duration
		var wc, cc, sc counts
		var peak int64
		for i := 0; i < iters; i++ {
			n++
			// A new destination registry each round: skopeo remembers where
			// it pushed a blob (its blob-info cache) and would mount from
			// the previous round's repository instead of copying.
			dst, err := newEnvRealm(r, false, wharfdBin, "localhost")
			if err != nil {
				return nil, err
			}
			err = func() error {
				defer dst.close()
				if err := writeDockerConfig(cfgDir, src, dst); err != nil {
					return err
				}
				return copyRound(ctx, src, dst, crane, skopeo, cfgDir, n, &round{
					walls: &walls, craneWalls: &craneWalls, skopeoWalls: &skopeoWalls,
					wc: &wc, cc: &cc, sc: &sc, peak: &peak,
				})
			}()
			if err != nil {
				return nil, err
			}
		}
		med, p95 := stats(walls)
		cmed, _ := stats(craneWalls)
		smed, _ := stats(skopeoWalls)
		rc := pairedRatio(walls, craneWalls)
		rows = append(rows,
			row{
				Case: "7", Name: fmt.Sprintf("copy %.0f MiB, 8 layers, registry→registry, RTT %s", mib, r), Unit: "ms", N: len(walls),
				Reqs: fmt.Sprintf("%d/%d", wc.reg, wc.tok), Conns: fmt.Sprintf("%d/%d", wc.regConns, wc.tokConns),
				Median: ms(med), P95: ms(p95), Baseline: ms(cmed), BaseName: "crane copy", Ratio: rc,
				Target: "≤1.00× crane", Pass: pass(rc <= 1.0),
				Note: fmt.Sprintf("wharf %.0f MiB/s, crane %.0f MiB/s, skopeo %.0f MiB/s", mib/med.Seconds(), mib/cmed.Seconds(), mib/smed.Seconds()),
			},
			row{
				Case: "7", Name: "  requests, wharf vs crane copy", Unit: "requests", N: len(walls),
				Reqs: fmt.Sprintf("%d/%d", cc.reg, cc.tok), Median: float64(wc.total()), Baseline: float64(cc.total()), BaseName: "crane copy",
				Ratio: float64(wc.total()) / float64(cc.total()), Target: "≤ crane", Pass: pass(wc.total() <= cc.total()),
			},
			row{
				Case: "7", Name: "  same copy, skopeo copy", Unit: "ms", N: len(skopeoWalls),
				Reqs: fmt.Sprintf("%d/%d", sc.reg, sc.tok), Median: ms(smed), Baseline: ms(med), BaseName: "wharf", Ratio: pairedRatio(skopeoWalls, walls),
			},
			row{
				Case: "7", Name: "  wharfd peak RSS (VmHWM) during copy", Unit: "MiB", N: len(walls),
				Median: float64(peak) / (1 << 20), Target: "≤64 MiB", Pass: pass(peak <= 64<<20),
			},
		)
	}
	return rows, nil
}

// round collects one round's measurements.
type round struct {
	walls, craneWalls, skopeoWalls *[]time.Duration
	wc, cc, sc                     *counts
	peak                           *int64
}

// copyRound copies the image once with each tool into dst, each into its
// own new repository.
func copyRound(ctx context.Context, src, dst *env, crane, skopeo, cfgDir string, n int, r *round) error {
	from := src.host + "/bench/big:1"
	runWharf := func() error {
		// A fresh daemon, so that its peak RSS is this copy's.
		d, droot, err := freshDaemon(src)
		if err != nil {
			return err
		}
		defer dropDaemon(d, droot)
		src.reset()
		dst.reset()
		w, err := copyWharf(ctx, d, src, dst, from, fmt.Sprintf("%s/bench/wharf-%d:1", dst.host, n))
		if err != nil {
			return err
		}
		*r.wc = addCounts(src.counts(), dst.counts())
		hwm, err := d.peakRSS()
		if err != nil {
			return err
		}
		*r.peak = max(*r.peak, hwm)
		*r.walls = append(*r.walls, w)
		return nil
	}
	runCrane := func() error {
		src.reset()
		dst.reset()
		cw, err := runTool(ctx, cfgDir, crane, "copy", "--insecure", from, fmt.Sprintf("%s/bench/crane-%d:1", dst.host, n))
		if err != nil {
			return err
		}
		*r.cc = addCounts(src.counts(), dst.counts())
		*r.craneWalls = append(*r.craneWalls, cw)
		return nil
	}
	runSkopeo := func() error {
		src.reset()
		dst.reset()
		sw, err := runTool(ctx, cfgDir, skopeo, "copy", "--quiet", "--src-tls-verify=false", "--dest-tls-verify=false",
			"docker://"+from, fmt.Sprintf("docker://%s/bench/skopeo-%d:1", dst.host, n))
		if err != nil {
			return err
		}
		*r.sc = addCounts(src.counts(), dst.counts())
		*r.skopeoWalls = append(*r.skopeoWalls, sw)
		return nil
	}
	// The order turns each round, so that no tool always meets the fresh
	// destination registry first.
	order := []func() error{runWharf, runCrane, runSkopeo}
	for i := 0; i < n%len(order); i++ {
		order = append(order[1:], order[0])
	}
	for _, run := range order {
		if err := run(); err != nil {
			return err
		}
	}
	return nil
}

func addCounts(a, b counts) counts {
	return counts{a.reg + b.reg, a.tok + b.tok, a.regConns + b.regConns, a.tokConns + b.tokConns}
}

// pushBig puts img into e as bench/big:1, its layers in parallel.
func pushBig(ctx context.Context, e *env, img *testregistry.Image) error {
	c := e.client()
	var wg sync.WaitGroup
	errs := make([]error, len(img.Layers))
	for i, l := range img.Layers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.PutBlob(ctx, "bench/big", l) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return c.PushImage(ctx, "bench/big", "1", img)
}

// writeDockerConfig writes a config.json with both registries' credentials,
// as `docker login` to each would: what crane and skopeo read.
func writeDockerConfig(dir string, envs ...*env) error {
	auths := map[string]map[string]string{}
	for _, e := range envs {
		auths[e.host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(e.reg.Username + ":" + e.reg.Password))}
	}
	b, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600)
}

// copyWharf is POST /wharf/images/copy with both registries' credentials
// in X-Registry-Config, reading the progress stream to its end.
func copyWharf(ctx context.Context, d *wharfd, src, dst *env, from, to string) (time.Duration, error) {
	auths := map[string]map[string]string{}
	for _, e := range []*env{src, dst} {
		auths[e.host] = map[string]string{"username": e.reg.Username, "password": e.reg.Password}
	}
	b, err := json.Marshal(auths)
	if err != nil {
		return 0, err
	}
	q := url.Values{"src": {from}, "dst": {to}}
	done := false
	el, err := d.stream(ctx, "copy", "/v1.50/wharf/images/copy?"+q.Encode(),
		http.Header{"X-Registry-Config": {base64.URLEncoding.EncodeToString(b)}}, func(line []byte) error {
			var m struct {
				Error string          `json:"error"`
				Aux   json.RawMessage `json:"aux"`
			}
			if json.Unmarshal(line, &m) == nil {
				if m.Error != "" {
					return fmt.Errorf("copy: %s", m.Error)
				}
				done = done || len(m.Aux) > 0
			}
			return nil
		})
	if err == nil && !done {
		err = fmt.Errorf("copy: the stream ended without a result")
	}
	return el, err
}

// runTool runs an anchor with DOCKER_CONFIG=cfgDir (crane) and
// REGISTRY_AUTH_FILE (skopeo) and returns its wall time.
func runTool(ctx context.Context, cfgDir, bin string, args ...string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+cfgDir, "REGISTRY_AUTH_FILE="+filepath.Join(cfgDir, "config.json"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return wall, nil
}

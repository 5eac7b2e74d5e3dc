//go:build bench

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// Case 13: mirror 20 repositories (one tag each, 2 layers of
// 64 KiB) from a token-mode registry into another, with `wharf sync`
// (POST /wharf/images/sync on a fresh daemon), `skopeo sync --src yaml`
// and regclient's `regsync once`, each into its own new destination
// registry, at the run's RTT on both sides. Three steps per tool: the
// first sync, a re-sync with nothing changed, a re-sync after 2 of the 20
// tags moved at the source. Wall time and requests (both registries and
// their token servers, at the counting proxies). Targets: wall time and
// requests ≤ the better of skopeo and regsync on each step, and the
// unchanged re-sync costs wharf exactly 2 HEADs per tag (one each side)
// and no other registry request.
const (
	syncBenchRepos = 20
	syncBenchLayer = 64 << 10
)

func syncBenchRepo(i int) string { return fmt.Sprintf("bench/sync/r%02d", i) }

type syncStep struct {
	wall time.Duration
	c    counts
	// heads: HEAD manifests at source and destination; others: every
	// other registry request (tokens not counted).
	heads, others int
}

func caseSync(ctx context.Context, root string, rtt time.Duration, wharfdBin string) ([]row, error) {
	src, err := newEnv(0, false, wharfdBin)
	if err != nil {
		return nil, err
	}
	defer src.close()
	c := src.client()
	for i := range syncBenchRepos {
		img, err := testregistry.NewImage(testregistry.ImageOptions{Layers: 2, LayerSize: syncBenchLayer})
		if err != nil {
			return nil, err
		}
		if err := c.PushImage(ctx, syncBenchRepo(i), "1", img); err != nil {
			return nil, err
		}
	}
	skopeo, err := skopeoBin(ctx)
	if err != nil {
		return nil, err
	}
	regsync := filepath.Join(root, ".cache", "bin", "regsync")
	if _, err := os.Stat(regsync); err != nil {
		return nil, fmt.Errorf("%s: %w (make regsync)", regsync, err)
	}
	cfgDir, err := os.MkdirTemp("", "wharf-bench-sync-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(cfgDir)

	type tool struct {
		name string
		dst  *env
		d    *wharfd
		root string
		run  func() (time.Duration, error)
	}
	var tools []*tool
	defer func() {
		for _, t := range tools {
			if t.d != nil {
				dropDaemon(t.d, t.root)
			}
			if t.dst != nil {
				t.dst.close()
			}
		}
	}()
	for _, name := range []string{"wharf sync", "skopeo sync", "regsync once"} {
		dst, err := newEnv(0, false, wharfdBin)
		if err != nil {
			return nil, err
		}
		t := &tool{name: name, dst: dst}
		tools = append(tools, t)
		switch name {
		case "wharf sync":
			d, droot, err := freshDaemon(src)
			if err != nil {
				return nil, err
			}
			t.d, t.root = d, droot
			t.run = func() (time.Duration, error) { return syncWharf(ctx, d, src, dst) }
		case "skopeo sync":
			yml := filepath.Join(cfgDir, "skopeo.yaml")
			if err := writeSkopeoYAML(yml, src); err != nil {
				return nil, err
			}
			auth := filepath.Join(cfgDir, "skopeo-auth")
			if err := os.MkdirAll(auth, 0o700); err != nil {
				return nil, err
			}
			if err := writeDockerConfig(auth, src, dst); err != nil {
				return nil, err
			}
			t.run = func() (time.Duration, error) {
				return runTool(ctx, auth, skopeo, "sync", "--src", "yaml", "--dest", "docker", "--dest-tls-verify=false", yml, dst.host+"/skopeo")
			}
		case "regsync once":
			cfg := filepath.Join(cfgDir, "regsync.yaml")
			if err := writeRegsyncConfig(cfg, src, dst); err != nil {
				return nil, err
			}
			t.run = func() (time.Duration, error) {
				return runTool(ctx, cfgDir, regsync, "once", "-c", cfg, "-v", "warn")
			}
		}
	}

	steps := []string{"first sync of 20 images", "re-sync, nothing changed", "re-sync, 2 of 20 changed"}
	results := make([][]syncStep, len(steps)) // [step][tool]
	for si := range steps {
		if si == 2 {
			// Two tags move at the source: new images under r00:1, r01:1.
			for i := range 2 {
				img, err := testregistry.NewImage(testregistry.ImageOptions{Layers: 2, LayerSize: syncBenchLayer})
				if err != nil {
					return nil, err
				}
				if err := c.PushImage(ctx, syncBenchRepo(i), "1", img); err != nil {
					return nil, err
				}
			}
		}
		for _, t := range tools {
			src.setRTT(rtt)
			t.dst.setRTT(rtt)
			src.reset()
			t.dst.reset()
			wall, err := t.run()
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", t.name, steps[si], err)
			}
			st := syncStep{wall: wall, c: addCounts(src.counts(), t.dst.counts())}
			st.heads = src.reg.Counter.Count("HEAD manifests") + t.dst.reg.Counter.Count("HEAD manifests")
			st.others = src.reg.Counter.Total() + t.dst.reg.Counter.Total() - st.heads
			results[si] = append(results[si], st)
		}
	}

	var rows []row
	for si, step := range steps {
		w, s, r := results[si][0], results[si][1], results[si][2]
		best := s
		bestName := "skopeo sync"
		if r.wall < s.wall {
			best, bestName = r, "regsync once"
		}
		bestReqs := min(s.c.total(), r.c.total())
		rows = append(rows,
			row{
				Case: "13", Name: fmt.Sprintf("%s, RTT %s", step, rtt), Unit: "ms", N: 1,
				Reqs: fmt.Sprintf("%d/%d", w.c.reg, w.c.tok), Conns: fmt.Sprintf("%d/%d", w.c.regConns, w.c.tokConns),
				Median: ms(w.wall), Baseline: ms(best.wall), BaseName: bestName, Ratio: ms(w.wall) / ms(best.wall),
				Target: "≤ best of skopeo, regsync", Pass: pass(w.wall <= best.wall),
				Note: fmt.Sprintf("skopeo sync %.0f ms %d/%d requests, regsync %.0f ms %d/%d requests",
					ms(s.wall), s.c.reg, s.c.tok, ms(r.wall), r.c.reg, r.c.tok),
			},
			row{
				Case: "13", Name: "  requests, " + step, Unit: "requests", N: 1,
				Median: float64(w.c.total()), Baseline: float64(bestReqs), BaseName: "best of skopeo, regsync",
				Ratio: float64(w.c.total()) / float64(bestReqs), Target: "≤ best", Pass: pass(w.c.total() <= bestReqs),
			},
		)
		if si == 1 {
			rows = append(rows, row{
				Case: "13", Name: "  unchanged re-sync: HEADs per tag / other registry requests", Unit: "requests", N: 1,
				Median: float64(w.heads) / syncBenchRepos, Baseline: float64(w.others),
				Target: "2 HEADs per tag, 0 others", Pass: pass(w.heads == 2*syncBenchRepos && w.others == 0),
				Note: fmt.Sprintf("skopeo: %d HEADs, %d others; regsync: %d HEADs, %d others", s.heads, s.others, r.heads, r.others),
			})
		}
	}
	return rows, nil
}

// syncWharf is POST /wharf/images/sync of the 20 repositories (tag "1"
// each, as the skopeo YAML names them) into dst/wharf, with both
// registries' credentials, reading the stream to its summary.
func syncWharf(ctx context.Context, d *wharfd, src, dst *env) (time.Duration, error) {
	auths := map[string]map[string]string{}
	for _, e := range []*env{src, dst} {
		auths[e.host] = map[string]string{"username": e.reg.Username, "password": e.reg.Password}
	}
	cfg, err := json.Marshal(auths)
	if err != nil {
		return 0, err
	}
	opts := types.SyncOptions{Destination: dst.host + "/wharf"}
	for i := range syncBenchRepos {
		opts.Sources = append(opts.Sources, types.SyncSource{Repository: src.host + "/" + syncBenchRepo(i), Tags: []string{"1"}})
	}
	body, err := json.Marshal(opts)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://wharfd/v1.50/wharf/images/sync", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Registry-Config", base64.URLEncoding.EncodeToString(cfg))
	start := time.Now()
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	wall := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("sync: %d %s", resp.StatusCode, b)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var last types.SyncEvent
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Summary == nil {
		return 0, fmt.Errorf("sync: no summary: %s", lines[len(lines)-1])
	}
	if last.Summary.Failed > 0 {
		return 0, fmt.Errorf("sync: %d failed: %+v", last.Summary.Failed, last.Summary.Failures)
	}
	return wall, nil
}

// writeSkopeoYAML names the 20 repositories' tag "1", as the wharf run
// does.
func writeSkopeoYAML(path string, src *env) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n  tls-verify: false\n  images:\n", src.host)
	for i := range syncBenchRepos {
		fmt.Fprintf(&b, "    %s: [\"1\"]\n", syncBenchRepo(i))
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// writeRegsyncConfig syncs each repository's tag "1" to dst/regsync/rNN
// (the names skopeo and wharf give them), over plain HTTP, with both
// registries' credentials; parallel 4, as wharf's image concurrency.
func writeRegsyncConfig(path string, src, dst *env) error {
	var b strings.Builder
	b.WriteString("version: 1\ncreds:\n")
	for _, e := range []*env{src, dst} {
		fmt.Fprintf(&b, "  - registry: %s\n    user: %s\n    pass: %s\n    tls: disabled\n", e.host, e.reg.Username, e.reg.Password)
	}
	b.WriteString("defaults:\n  parallel: 4\nsync:\n")
	for i := range syncBenchRepos {
		fmt.Fprintf(&b, "  - source: %s/%s:1\n    target: %s/regsync/r%02d:1\n    type: image\n", src.host, syncBenchRepo(i), dst.host, i)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

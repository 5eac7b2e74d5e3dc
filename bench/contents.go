//go:build bench

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/gzindex"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// Case 14: inside an image without pulling it. A 5-layer gzip image of
// about 200 MB (files of 64 KiB of random bytes, so gzip keeps their size;
// 5 × 4 MiB with BENCH_QUICK) on the token registry, at RTT 0 and
// BENCH_RTT, the CLI through a fresh wharfd beside the anchors in the same
// run, turn by turn:
//
//   - cold `wharf ls -R --remote IMAGE /` beside `crane export IMAGE - |
//     tar -t`: ≤ 1.1×, the layers read once (one GET per layer, no Range);
//   - warm ls (the index built): 0 blob requests, ≤ 0.05× crane;
//   - `wharf cat --remote` of a 10 KiB file in the middle of the bottom
//     layer, warm: ≤ 1 Range request of ≤ one span plus the file, ≤ 0.1×
//     `regctl image get-file`; cold: ≤ 1.1× regctl;
//   - the index on disk: the data-root's growth over the cold ls, as a
//     share of the uncompressed layers (goal ≤ 2 %).
const (
	contentsLayers   = 5
	contentsFileSize = 64 << 10
	contentsCatPath  = "/etc/bench/target.conf"
	contentsCatSize  = 10 << 10
	contentsRepo     = "bench/contents"
)

// contentsImage is the case's image: layer i holds dir layerN/ of 64 KiB
// files; the bottom one also the 10 KiB file cat reads, halfway through it.
func contentsImage(layerSize int) (*testregistry.Image, []byte, int64, error) {
	img := &testregistry.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}}
	rng := rand.NewChaCha8([32]byte{'c', 'o', 'n', 't', 'e', 'n', 't', 's'})
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	cfg := ocispec.Image{Platform: img.Platform, RootFS: ocispec.RootFS{Type: "layers"}, Created: &created}
	target := make([]byte, contentsCatSize)
	rng.Read(target)
	var uncompressed int64
	for i := 0; i < contentsLayers; i++ {
		var raw, gz bytes.Buffer
		tw := tar.NewWriter(&raw)
		files := layerSize / contentsFileSize
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: fmt.Sprintf("layer%d/", i), Mode: 0o755, ModTime: created}); err != nil {
			return nil, nil, 0, err
		}
		for f := 0; f < files; f++ {
			if i == 0 && f == files/2 {
				for _, h := range []*tar.Header{
					{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755, ModTime: created},
					{Typeflag: tar.TypeDir, Name: "etc/bench/", Mode: 0o755, ModTime: created},
					{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(contentsCatPath, "/"), Mode: 0o644, Size: contentsCatSize, ModTime: created},
				} {
					if err := tw.WriteHeader(h); err != nil {
						return nil, nil, 0, err
					}
				}
				if _, err := tw.Write(target); err != nil {
					return nil, nil, 0, err
				}
			}
			if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("layer%d/f%05d.bin", i, f), Mode: 0o644, Size: contentsFileSize, ModTime: created}); err != nil {
				return nil, nil, 0, err
			}
			if _, err := io.CopyN(tw, rng, contentsFileSize); err != nil {
				return nil, nil, 0, err
			}
		}
		if err := tw.Close(); err != nil {
			return nil, nil, 0, err
		}
		uncompressed += int64(raw.Len())
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
		if _, err := zw.Write(raw.Bytes()); err != nil {
			return nil, nil, 0, err
		}
		if err := zw.Close(); err != nil {
			return nil, nil, 0, err
		}
		l := testregistry.NewBlob(ocispec.MediaTypeImageLayerGzip, gz.Bytes())
		img.Layers = append(img.Layers, l)
		diffID := digest.FromBytes(raw.Bytes())
		img.DiffIDs = append(img.DiffIDs, diffID.String())
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, diffID)
	}
	cb, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, 0, err
	}
	img.Config = testregistry.NewBlob(ocispec.MediaTypeImageConfig, cb)
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: img.Config.Descriptor()}
	m.SchemaVersion = 2
	for _, l := range img.Layers {
		m.Layers = append(m.Layers, l.Descriptor())
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, nil, 0, err
	}
	img.Manifest = testregistry.NewBlob(ocispec.MediaTypeImageManifest, mb)
	return img, target, uncompressed, nil
}

// contentsRun is one turn's measurements.
type contentsRun struct {
	coldLs, crane, warmLs, warmCat, coldCat, regctl time.Duration
	coldLsBlobs, coldLsRanges, warmLsBlobs          int
	warmCatBlobs, warmCatMaxRange                   int
	indexBytes                                      int64
	entries                                         int
}

func caseContents(ctx context.Context, root string, rtt time.Duration, quick bool, wharfdBin string) ([]row, error) {
	e, err := newEnvRealm(0, false, wharfdBin, "localhost")
	if err != nil {
		return nil, err
	}
	defer e.close()
	layerSize := 40 << 20
	iters := 3
	if quick {
		layerSize, iters = 4<<20, 1
	}
	img, target, uncompressed, err := contentsImage(layerSize)
	if err != nil {
		return nil, err
	}
	c := e.client()
	for _, l := range img.Layers {
		if err := c.PutBlob(ctx, contentsRepo, l); err != nil {
			return nil, err
		}
	}
	if err := c.PushImage(ctx, contentsRepo, "1", img); err != nil {
		return nil, err
	}
	var compressed int64
	for _, l := range img.Layers {
		compressed += int64(len(l.Data))
	}
	crane, err := craneBin(ctx, root)
	if err != nil {
		return nil, err
	}
	regctl := filepath.Join(root, ".cache", "bin", "regctl")
	if _, err := os.Stat(regctl); err != nil {
		return nil, fmt.Errorf("%s: %w (make regctl)", regctl, err)
	}
	wharf := filepath.Join(filepath.Dir(wharfdBin), "wharf")
	if _, err := os.Stat(wharf); err != nil {
		return nil, fmt.Errorf("%s: %w (make build)", wharf, err)
	}
	cfgDir, err := os.MkdirTemp("", "wharf-bench-contents-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(cfgDir)
	if err := writeDockerConfig(cfgDir, e); err != nil {
		return nil, err
	}
	if err := writeRegctlConfig(cfgDir, e); err != nil {
		return nil, err
	}
	ref := e.host + "/" + contentsRepo + ":1"
	var layerDigests []string
	for _, l := range img.Layers {
		layerDigests = append(layerDigests, l.Digest)
	}

	var rows []row
	rtts := []time.Duration{0}
	if rtt != 0 {
		rtts = append(rtts, rtt)
	}
	for _, r := range rtts {
		e.setRTT(r)
		var runs []contentsRun
		for i := 0; i < iters; i++ {
			run, err := contentsTurn(ctx, e, wharf, crane, regctl, cfgDir, ref, target, layerDigests)
			if err != nil {
				return rows, fmt.Errorf("RTT %s: %w", r, err)
			}
			runs = append(runs, run)
		}
		rows = append(rows, contentsRows(runs, r, compressed, uncompressed, len(img.Layers))...)
	}
	return rows, nil
}

// contentsTurn measures each operation once, each anchor right beside it.
func contentsTurn(ctx context.Context, e *env, wharf, crane, regctl, cfgDir, ref string, target []byte, layers []string) (contentsRun, error) {
	var run contentsRun
	d, droot, err := freshDaemon(e)
	if err != nil {
		return run, err
	}
	defer dropDaemon(d, droot)
	cli := func(args ...string) ([]byte, time.Duration, error) {
		return runCapture(ctx, cfgDir, wharf, append([]string{"-H", "unix://" + d.sock}, args...)...)
	}
	before := dirBytes(droot)

	e.reset()
	out, w, err := cli("ls", "-R", "--remote", ref, "/")
	if err != nil {
		return run, err
	}
	run.coldLs, run.entries = w, bytes.Count(out, []byte("\n"))
	// The layers' GETs: the config is a blob GET too, but no layer.
	ranges := e.reg.Counter.HeaderValues("Range")
	for i, req := range e.reg.Counter.Requests() {
		if layerGET(req, layers) {
			run.coldLsBlobs++
			if ranges[i] != "" {
				run.coldLsRanges++
			}
		}
	}
	run.indexBytes = dirBytes(droot) - before

	e.reset()
	if run.crane, err = runTool(ctx, cfgDir, "/bin/bash", "-o", "pipefail", "-c", crane+" export --insecure "+ref+" - | tar -t > /dev/null"); err != nil {
		return run, err
	}

	e.reset()
	if _, run.warmLs, err = cli("ls", "-R", "--remote", ref, "/"); err != nil {
		return run, err
	}
	run.warmLsBlobs = countLayerGETs(e, layers)

	e.reset()
	got, w, err := cli("cat", "--remote", ref, contentsCatPath)
	if err != nil {
		return run, err
	}
	if !bytes.Equal(got, target) {
		return run, fmt.Errorf("warm cat: %d bytes, not the file's", len(got))
	}
	run.warmCat = w
	run.warmCatBlobs = countLayerGETs(e, layers)
	for _, v := range e.reg.Counter.HeaderValues("Range") {
		run.warmCatMaxRange = max(run.warmCatMaxRange, rangeLen(v))
	}

	// Cold cat: a new daemon, nothing indexed.
	d2, droot2, err := freshDaemon(e)
	if err != nil {
		return run, err
	}
	defer dropDaemon(d2, droot2)
	e.reset()
	got, run.coldCat, err = runCapture(ctx, cfgDir, wharf, "-H", "unix://"+d2.sock, "cat", "--remote", ref, contentsCatPath)
	if err != nil {
		return run, err
	}
	if !bytes.Equal(got, target) {
		return run, fmt.Errorf("cold cat: %d bytes, not the file's", len(got))
	}

	e.reset()
	got, run.regctl, err = runCapture(ctx, cfgDir, regctl, "image", "get-file", ref, contentsCatPath)
	if err != nil {
		return run, err
	}
	if !bytes.Equal(got, target) {
		return run, fmt.Errorf("regctl get-file: %d bytes, not the file's", len(got))
	}
	return run, nil
}

func contentsRows(runs []contentsRun, rtt time.Duration, compressed, uncompressed int64, layers int) []row {
	pick := func(f func(contentsRun) time.Duration) []time.Duration {
		var out []time.Duration
		for _, r := range runs {
			out = append(out, f(r))
		}
		return out
	}
	coldLs, crane := pick(func(r contentsRun) time.Duration { return r.coldLs }), pick(func(r contentsRun) time.Duration { return r.crane })
	warmLs := pick(func(r contentsRun) time.Duration { return r.warmLs })
	warmCat, coldCat := pick(func(r contentsRun) time.Duration { return r.warmCat }), pick(func(r contentsRun) time.Duration { return r.coldCat })
	regctl := pick(func(r contentsRun) time.Duration { return r.regctl })
	med := func(ds []time.Duration) time.Duration { m, _ := stats(ds); return m }
	last := runs[len(runs)-1]
	worst := func(f func(contentsRun) int) int {
		n := 0
		for _, r := range runs {
			n = max(n, f(r))
		}
		return n
	}
	warmBlobs := worst(func(r contentsRun) int { return r.warmLsBlobs })
	catBlobs := worst(func(r contentsRun) int { return r.warmCatBlobs })
	catRange := worst(func(r contentsRun) int { return r.warmCatMaxRange })
	// One span plus the file: random bytes do not compress, so a span of
	// output is about a span of gzip; the read ends with the deflate block
	// that holds the file's last byte, at most 64 KiB further (the largest
	// stored block), plus the blocks' headers (5 bytes per 64 KiB).
	spanBound := gzindex.DefaultSpan + contentsCatSize + 64<<10 + gzindex.DefaultSpan/1000
	name := func(s string) string { return fmt.Sprintf("%s, RTT %s", s, rtt) }
	lsRatio, warmRatio := pairedRatio(coldLs, crane), pairedRatio(warmLs, crane)
	warmCatRatio, coldCatRatio := pairedRatio(warmCat, regctl), pairedRatio(coldCat, regctl)
	pct := 100 * float64(last.indexBytes) / float64(uncompressed)
	return []row{
		{Case: "14", Name: name("cold ls -R --remote / (5 gzip layers)"), Unit: "ms", N: len(runs),
			Reqs: fmt.Sprintf("%d layer GETs", last.coldLsBlobs), Median: ms(med(coldLs)), Baseline: ms(med(crane)), BaseName: "crane export | tar -t",
			Ratio: lsRatio, Target: "≤ 1.1×, each layer read once", Pass: pass(lsRatio <= 1.1 && last.coldLsBlobs == layers && last.coldLsRanges == 0),
			Note: fmt.Sprintf("%d entries; %.0f MiB of layers; %d layer GETs, %d with Range", last.entries, float64(compressed)/(1<<20), last.coldLsBlobs, last.coldLsRanges)},
		{Case: "14", Name: name("warm ls -R --remote / (index built)"), Unit: "ms", N: len(runs),
			Reqs: fmt.Sprintf("%d layer GETs", warmBlobs), Median: ms(med(warmLs)), Baseline: ms(med(crane)), BaseName: "crane export | tar -t",
			Ratio: warmRatio, Target: "≤ 0.05×, 0 blob requests", Pass: pass(warmRatio <= 0.05 && warmBlobs == 0)},
		{Case: "14", Name: name("warm cat --remote, 10 KiB in the bottom layer"), Unit: "ms", N: len(runs),
			Reqs: fmt.Sprintf("%d layer GETs", catBlobs), Median: ms(med(warmCat)), Baseline: ms(med(regctl)), BaseName: "regctl image get-file",
			Ratio: warmCatRatio, Target: "≤ 0.1×, ≤ 1 Range of ≤ a span + the file", Pass: pass(warmCatRatio <= 0.1 && catBlobs <= 1 && catRange <= spanBound),
			Note: fmt.Sprintf("largest Range %d bytes (bound %d)", catRange, spanBound)},
		{Case: "14", Name: name("cold cat --remote, 10 KiB in the bottom layer"), Unit: "ms", N: len(runs),
			Median: ms(med(coldCat)), Baseline: ms(med(regctl)), BaseName: "regctl image get-file",
			Ratio: coldCatRatio, Target: "≤ 1.1×", Pass: pass(coldCatRatio <= 1.1)},
		{Case: "14", Name: name("index on disk, % of the uncompressed layers"), Unit: "%", N: 1,
			Median: pct, Target: "≤ 2 %", Pass: pass(last.indexBytes > 0 && pct <= 2),
			Note: fmt.Sprintf("%d bytes of index (the data-root's growth over the cold ls) for %d uncompressed", last.indexBytes, uncompressed)},
	}
}

// writeRegctlConfig gives regctl the registry's credentials over plain
// HTTP ($HOME/.regctl/config.json, which runCapture's HOME points at).
func writeRegctlConfig(dir string, e *env) error {
	b, err := json.Marshal(map[string]any{"hosts": map[string]any{e.host: map[string]string{
		"tls": "disabled", "hostname": e.host, "user": e.reg.Username, "pass": e.reg.Password,
	}}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, ".regctl"), 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ".regctl", "config.json"), b, 0o600)
}

// runCapture runs a client with cfgDir as its HOME and DOCKER_CONFIG and
// returns its stdout and wall time.
func runCapture(ctx context.Context, cfgDir, bin string, args ...string) ([]byte, time.Duration, error) {
	return runCaptureEnv(ctx, cfgDir, nil, bin, args...)
}

// runCaptureEnv is runCapture with env added to the environment.
func runCaptureEnv(ctx context.Context, cfgDir string, env []string, bin string, args ...string) ([]byte, time.Duration, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+cfgDir, "DOCKER_CONFIG="+cfgDir, "REGCTL_CONFIG="+filepath.Join(cfgDir, ".regctl", "config.json"), "WHARF_HOST=")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), wall, nil
}

// layerGET says whether req ("METHOD /path") is a GET of one of layers.
func layerGET(req string, layers []string) bool {
	if !strings.HasPrefix(req, "GET ") || !strings.Contains(req, "/blobs/") {
		return false
	}
	for _, d := range layers {
		if strings.HasSuffix(req, "/blobs/"+d) {
			return true
		}
	}
	return false
}

func countLayerGETs(e *env, layers []string) int {
	n := 0
	for _, req := range e.reg.Counter.Requests() {
		if layerGET(req, layers) {
			n++
		}
	}
	return n
}

// rangeLen is the length of a `bytes=A-B` range, 0 for none.
func rangeLen(v string) int {
	a, b, ok := strings.Cut(strings.TrimPrefix(v, "bytes="), "-")
	if !ok {
		return 0
	}
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || last < first {
		return 0
	}
	return last - first + 1
}

// dirBytes is the size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			if fi, err := de.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

//go:build bench

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Case 15: what changed, without pulling. The two versions of
// diff_image.go (about 200 MB each; 3 × 4 MiB of base with BENCH_QUICK) on
// the token registry, at RTT 0 and BENCH_RTT, bytes counted where the
// registry's RTT proxy delivers them to the client (headers included),
// turn by turn with the order of wharf and its baseline alternated:
//
//   - `wharf diff --remote --format json A B` on a fresh wharfd (cold) and
//     again on the same one (warm), beside `crane pull --format=oci A B` into
//     a new layout and diff_baseline.go's comparison of the two: ≤ 0.1× the
//     bytes and ≤ 0.2× the time, and the diff must name exactly the package
//     and the two files (status and program) that changed;
//   - `wharf packages --remote --format json B` on a fresh wharfd (cold)
//     and again (warm), beside `syft scan registry:B` (.cache/bin/syft,
//     make syft; or $SYFT): ≤ 0.1× the bytes and ≤ 0.2× the time, and the
//     same packages (type, name, version) as syft; and cold again for
//     version 2 with eStargz layers, where wharf reads each layer's TOC
//     instead of the layer, beside syft reading that image.

// meas is one operation: its wall time, the bytes the registry sent and
// its blob GETs.
type meas struct {
	d        time.Duration
	b        int64
	gets     int
	reg, tok int // all requests at the registry and at the token server
}

// pkgRun is one image's packages, by wharf cold and warm and by syft.
type pkgRun struct {
	cold, warm, syft meas
	out, syftOut     []byte
	ok               bool
	note             string
}

// whatRun is one turn's measurements: the diff, the packages of version 2
// (gz) and of version 2 in eStargz (toc).
type whatRun struct {
	diffCold, diffWarm, baseline meas
	diffFound, baselineFound     string
	compare                      time.Duration // the baseline's comparison, after crane pull
	diffOK                       bool
	gz, toc                      pkgRun
}

func caseWhatChanged(ctx context.Context, root string, rtt time.Duration, quick bool, wharfdBin string) ([]row, error) {
	syft := os.Getenv("SYFT")
	if syft == "" {
		syft = filepath.Join(root, ".cache", "bin", "syft")
	}
	if _, err := os.Stat(syft); err != nil {
		return nil, fmt.Errorf("%s: %w (make syft)", syft, err)
	}
	wharf := filepath.Join(filepath.Dir(wharfdBin), "wharf")
	if _, err := os.Stat(wharf); err != nil {
		return nil, fmt.Errorf("%s: %w (make build)", wharf, err)
	}
	crane, err := craneBin(ctx, root)
	if err != nil {
		return nil, err
	}
	e, err := newEnvRealm(0, false, wharfdBin, "localhost")
	if err != nil {
		return nil, err
	}
	defer e.close()
	e.regProxy.counting.Store(true)
	iters := 3
	if quick {
		iters = 1
	}
	if v := os.Getenv("BENCH_TURNS"); v != "" {
		if iters, err = strconv.Atoi(v); err != nil || iters < 1 {
			return nil, fmt.Errorf("BENCH_TURNS=%q: a number ≥ 1", v)
		}
	}
	fx, err := diffImages(diffSizesFor(quick))
	if err != nil {
		return nil, err
	}
	c := e.client()
	if err := c.PushImage(ctx, diffRepo, "1", fx.from); err != nil {
		return nil, err
	}
	if err := c.PushImage(ctx, diffRepo, "2", fx.to); err != nil {
		return nil, err
	}
	if err := c.PushImage(ctx, diffRepo, "2-estargz", fx.toStargz); err != nil {
		return nil, err
	}
	// What the turns need of the images is their manifests' digests: let
	// the 400 MB of layers go.
	fx.from.Layers, fx.to.Layers, fx.toStargz.Layers = nil, nil, nil
	cfgDir, err := os.MkdirTemp("", "wharf-bench-what-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(cfgDir)
	if err := writeDockerConfig(cfgDir, e); err != nil {
		return nil, err
	}
	w := &whatTools{e: e, wharf: wharf, crane: crane, syft: syft, cfgDir: cfgDir, fx: fx,
		from: e.host + "/" + diffRepo + ":1", to: e.host + "/" + diffRepo + ":2", toStargz: e.host + "/" + diffRepo + ":2-estargz"}

	var rows []row
	rtts := []time.Duration{0}
	if rtt != 0 {
		rtts = append(rtts, rtt)
	}
	for _, r := range rtts {
		e.setRTT(r)
		var runs []whatRun
		for i := 0; i < iters; i++ {
			run, err := w.turn(ctx, i%2 == 1)
			if err != nil {
				return rows, fmt.Errorf("RTT %s: %w", r, err)
			}
			runs = append(runs, run)
		}
		rows = append(rows, whatRows(runs, r, fx)...)
	}
	return rows, nil
}

type whatTools struct {
	e                  *env
	wharf, crane, syft string
	cfgDir, from, to   string
	toStargz           string
	fx                 *diffFixture
}

// measure runs fn after a reset of the counters and returns its time, the
// bytes the clients were sent meanwhile and the blob GETs.
func (w *whatTools) measure(what string, fn func() (time.Duration, error)) (meas, error) {
	w.e.reset()
	d, err := fn()
	m := meas{d: d, b: w.e.regProxy.bytesDown(), gets: w.e.reg.Counter.Count("GET blobs"),
		reg: w.e.reg.Counter.Total(), tok: w.e.reg.TokenCounter.Total()}
	if os.Getenv("BENCH_VERBOSE") == "1" {
		fmt.Fprintf(os.Stderr, "case 15 %s: %s, %d bytes\n", what, d, m.b)
		ranges := w.e.reg.Counter.HeaderValues("Range")
		for i, r := range w.e.reg.Counter.Requests() {
			fmt.Fprintf(os.Stderr, "  %s %s\n", r, ranges[i])
		}
	}
	return m, err
}

// turn measures each operation once; with baselineFirst the baselines run
// before wharf, so that neither always comes first.
func (w *whatTools) turn(ctx context.Context, baselineFirst bool) (whatRun, error) {
	var run whatRun
	gzPkgs := func(ctx context.Context, r *whatRun) error { return w.wharfPackages(ctx, w.to, &r.gz) }
	gzSyft := func(ctx context.Context, r *whatRun) error { return w.syftPackages(ctx, w.to, &r.gz) }
	tocPkgs := func(ctx context.Context, r *whatRun) error { return w.wharfPackages(ctx, w.toStargz, &r.toc) }
	tocSyft := func(ctx context.Context, r *whatRun) error { return w.syftPackages(ctx, w.toStargz, &r.toc) }
	steps := []func(context.Context, *whatRun) error{w.wharfDiff, w.baselineDiff, gzPkgs, gzSyft, tocPkgs, tocSyft}
	if baselineFirst {
		steps = []func(context.Context, *whatRun) error{w.baselineDiff, w.wharfDiff, gzSyft, gzPkgs, tocSyft, tocPkgs}
	}
	for _, s := range steps {
		if err := s(ctx, &run); err != nil {
			return run, err
		}
	}
	for _, p := range []*pkgRun{&run.gz, &run.toc} {
		p.ok, p.note = comparePackages(p.out, p.syftOut, w.fx.packages)
	}
	return run, nil
}

// wharfDiff: cold on a fresh daemon, then warm on the same one.
func (w *whatTools) wharfDiff(ctx context.Context, run *whatRun) error {
	d, droot, err := freshDaemon(w.e)
	if err != nil {
		return err
	}
	defer dropDaemon(d, droot)
	var out []byte
	diff := func() (time.Duration, error) {
		var wall time.Duration
		var err error
		out, wall, err = runCapture(ctx, w.cfgDir, w.wharf, "-H", "unix://"+d.sock, "diff", "--remote", "--format", "json", w.from, w.to)
		return wall, err
	}
	if run.diffCold, err = w.measure("diff", diff); err != nil {
		return err
	}
	run.diffOK, run.diffFound = checkWharfDiff(out)
	if run.diffWarm, err = w.measure("diff", diff); err != nil {
		return err
	}
	return nil
}

// baselineDiff: crane pulls both into a new layout; the comparison reads it.
func (w *whatTools) baselineDiff(ctx context.Context, run *whatRun) error {
	dir, err := os.MkdirTemp("", "wharf-bench-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var found *baselineDiff
	run.baseline, err = w.measure("crane pull + compare", func() (time.Duration, error) {
		start := time.Now()
		if _, err := runTool(ctx, w.cfgDir, w.crane, "pull", "--insecure", "--format=oci", w.from, w.to, dir); err != nil {
			return 0, err
		}
		var err error
		cmp := time.Now()
		found, err = layoutDiff(dir, w.fx.from.Manifest.Digest, w.fx.to.Manifest.Digest)
		run.compare = time.Since(cmp)
		return time.Since(start), err
	})
	if err != nil {
		return err
	}
	run.baselineFound = fmt.Sprintf("changed %v, added %v, removed %v, packages %v", found.changed, found.added, found.removed, found.packages)
	return nil
}

// wharfPackages: the packages of ref, cold on a fresh daemon, then warm
// on the same one.
func (w *whatTools) wharfPackages(ctx context.Context, ref string, run *pkgRun) error {
	d, droot, err := freshDaemon(w.e)
	if err != nil {
		return err
	}
	defer dropDaemon(d, droot)
	var out []byte
	list := func() (time.Duration, error) {
		var wall time.Duration
		var err error
		out, wall, err = runCapture(ctx, w.cfgDir, w.wharf, "-H", "unix://"+d.sock, "packages", "--remote", "--format", "json", ref)
		return wall, err
	}
	if run.cold, err = w.measure("packages "+ref, list); err != nil {
		return err
	}
	run.out = out
	if run.warm, err = w.measure("packages "+ref, list); err != nil {
		return err
	}
	return nil
}

// syftPackages: syft reads ref from the registry (its own pull, into a
// temp dir it removes) and lists its packages.
func (w *whatTools) syftPackages(ctx context.Context, ref string, run *pkgRun) error {
	var out []byte
	var err error
	run.syft, err = w.measure("syft "+ref, func() (time.Duration, error) {
		var wall time.Duration
		var err error
		out, wall, err = runCaptureEnv(ctx, w.cfgDir, []string{
			"SYFT_CHECK_FOR_APP_UPDATE=false", "SYFT_REGISTRY_INSECURE_USE_HTTP=true",
			"SYFT_REGISTRY_AUTH_AUTHORITY=" + w.e.host, "SYFT_REGISTRY_AUTH_USERNAME=" + w.e.reg.Username,
			"SYFT_REGISTRY_AUTH_PASSWORD=" + w.e.reg.Password, "TMPDIR=" + os.TempDir(),
		}, w.syft, "scan", "-q", "-o", "syft-json", "registry:"+ref)
		return wall, err
	})
	if err != nil {
		return err
	}
	run.syftOut = out
	return nil
}

// checkWharfDiff says whether the diff's JSON names exactly the package
// and files that changed, and what it found.
func checkWharfDiff(out []byte) (bool, string) {
	var d struct {
		Files *struct {
			Changes []struct {
				Path, Change string
			}
			LayersIndexed int
		}
		Packages *struct {
			Added, Removed       []struct{ Name string }
			Upgraded, Downgraded []struct{ Name, From, To string }
		}
	}
	if err := json.Unmarshal(out, &d); err != nil {
		return false, fmt.Sprintf("not the diff's JSON: %v", err)
	}
	if d.Files == nil || d.Packages == nil {
		return false, "no files or packages section"
	}
	var files []string
	for _, c := range d.Files.Changes {
		files = append(files, c.Change+" /"+strings.TrimPrefix(c.Path, "/"))
	}
	sort.Strings(files)
	var pkgs []string
	for _, p := range d.Packages.Upgraded {
		pkgs = append(pkgs, p.Name+" "+p.From+" -> "+p.To)
	}
	for _, p := range d.Packages.Downgraded {
		pkgs = append(pkgs, "downgraded "+p.Name)
	}
	for _, p := range d.Packages.Added {
		pkgs = append(pkgs, "+"+p.Name)
	}
	for _, p := range d.Packages.Removed {
		pkgs = append(pkgs, "-"+p.Name)
	}
	wantFiles := []string{"changed " + diffProgram, "changed " + diffStatusPath}
	wantPkgs := []string{diffPackage + " " + diffVersionFrom + " -> " + diffVersionTo}
	found := fmt.Sprintf("files %v (%d layers indexed), packages %v", files, d.Files.LayersIndexed, pkgs)
	return slices.Equal(files, wantFiles) && slices.Equal(pkgs, wantPkgs), found
}

// pkgList reads "TYPE NAME VERSION" lines from wharf's packages JSON
// (ImagePackages) or from syft's (artifacts), sorted.
func pkgList(out []byte) ([]string, error) {
	var v struct {
		Packages []struct{ Name, Version, Type string }
		// syft-json, should wharf's json be syft's format.
		Artifacts []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Type    string `json:"type"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, err
	}
	var list []string
	for _, p := range v.Packages {
		list = append(list, p.Type+" "+p.Name+" "+p.Version)
	}
	for _, p := range v.Artifacts {
		list = append(list, p.Type+" "+p.Name+" "+p.Version)
	}
	sort.Strings(list)
	return list, nil
}

// comparePackages says whether wharf's list and syft's are the same
// packages (type, name, version) and hold the want of the fixture's status.
func comparePackages(wharfOut, syftOut []byte, want int) (bool, string) {
	a, err := pkgList(wharfOut)
	if err != nil {
		return false, fmt.Sprintf("wharf packages: not JSON: %v", err)
	}
	b, err := pkgList(syftOut)
	if err != nil {
		return false, fmt.Sprintf("syft: not JSON: %v", err)
	}
	var onlyA, onlyB []string
	for _, p := range a {
		if _, ok := slices.BinarySearch(b, p); !ok {
			onlyA = append(onlyA, p)
		}
	}
	for _, p := range b {
		if _, ok := slices.BinarySearch(a, p); !ok {
			onlyB = append(onlyB, p)
		}
	}
	note := fmt.Sprintf("wharf %d packages, syft %d", len(a), len(b))
	if len(onlyA)+len(onlyB) > 0 {
		note += fmt.Sprintf("; only wharf: %v; only syft: %v", firstN(onlyA, 3), firstN(onlyB, 3))
	}
	return len(onlyA)+len(onlyB) == 0 && len(a) == want, note
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}

//go:build bench

package main

// Case 11: the store at scale.
//
// For each size (500, 5,000 and 50,000 images; BENCH_QUICK: 200, 2,000 and
// 5,000) a data-root is prepared directly by prepareRootWith, as case 4
// prepares its own (today's format: blobs/ and wharf/images.json; the one
// place to change when the format changes), with scaleOwn images that own
// their layer. Preparation is off the measured path; its time is in the
// start-up row's note. Then, against wharfd on that root:
//
//   - start-up to the first 200 from /_ping, from exec (startWharfd polls
//     every 10 ms), median of 3 starts after an uncounted first start (which
//     writes index.json from the records); the third daemon stays up for
//     the rest;
//   - inspect by name and by a 12-character short ID, 50 each, alternated;
//   - GET /images/json with no filter (returns n), reference= a glob
//     matching 10 images, label=n=7 (1 image) and reference=nomatch (0),
//     5 rounds, alternated, after one uncounted cold list;
//   - POST /images/{name}/tag of 10 distinct images, then DELETE of those
//     second tags with noprune (untag);
//   - the record step: POST /images/create?fromSrc=- of a tiny tar, 10
//     times after one uncounted import; the layer is then already in the
//     store, so each import writes one small config and manifest and one
//     new record. An import rather than a pull from a local registry: it
//     has no network, no registry and no token in the way, and its fixed
//     part is the same at every size, so what grows is the record step;
//   - rmi (prune, the default) of 10 images that own their layer: the
//     record goes and GC deletes config, manifest and layer (checked on
//     disk);
//   - 64 concurrent tags of 64 distinct images (wall time) beside one tag
//     (the median of 3 single tags right before), 5 rounds, with the
//     CPU both sides spent on them over the cores: the wall's floor;
//   - wharfd's VmHWM at the end of the size's run.
//
// Rows: one per measure and size, and one growth row per measure from the
// smallest size to the largest, with its target.
//
// The case is off by default: BENCH_SCALE=1 adds it to the default cases,
// or list it in BENCH_CASES (BENCH_CASES=11). At 50,000 images it takes
// minutes (each change rewrites a records file of 32 MB), and it
// needs about 450 MB of disk in $TMPDIR for its 100,000 small blobs.
// One full run took 311 s on 2 CPUs, 258 s of it at 50,000.

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

const (
	scaleOwn        = 10 // images with a layer of their own, removed by the rmi step
	scaleIters      = 10 // tags, untags, imports, rmis
	scaleInspects   = 50 // per kind
	scaleLists      = 5  // rounds of the four lists
	scaleStarts     = 3
	scaleConc       = 64
	scaleConcRounds = 5
)

// scaleListVariants are the GET /images/json variants: the query and the number of
// images it must return (-1: all n).
var scaleListVariants = []struct {
	key, name, query string
	want             int
}{
	{"all", "GET /images/json, no filter (returns all)", "", -1},
	{"ref", "GET /images/json, reference= 10 images", `{"reference":["127.0.0.1:5000/many/img-1?"]}`, 10},
	{"label", "GET /images/json, label=n=7 (1 image)", `{"label":["n=7"]}`, 1},
	{"none", "GET /images/json, reference=nomatch (0 images)", `{"reference":["nomatch"]}`, 0},
}

type scaleResult struct {
	n                    int
	prep, firstStart     time.Duration
	recordsBytes         int64
	listCold             time.Duration
	starts, byName, byID []time.Duration
	tag, untag, record   []time.Duration
	rmi, single, conc    []time.Duration
	concRatio            []float64
	// concFloor: per round, the CPU the 64 tags cost (wharfd's threads
	// and this process) over the machine's cores: the wall no store can
	// go under here.
	concFloor []time.Duration
	// concServer: wharfd's share of it, per tag.
	concServer []time.Duration
	// concCommits: meta.db commits per round of 64 (the group commit).
	concCommits []int
	lists       map[string][]time.Duration
	rss         int64
	// stepPeaks: VmHWM over each step (reset before it through
	// /proc/PID/clear_refs), in step order; anon/file: the largest RssAnon
	// and RssFile sampled every 10 ms from the measured start to the end.
	stepPeaks         []string
	maxAnon, maxFile  int64
	scrub             time.Duration // the background scrub after the measured start (0: none reported)
	gcLeft            int           // owned layers still on disk after their rmi
	stepSecs          []string
	recordsBytesAfter int64
	importIDs         int
}

// parseScaleSizes are the sizes to run: BENCH_SCALE_SIZES (a comma-separated
// list, e.g. 50000 or 500,50000) when set, else 500, 5,000 and 50,000
// (BENCH_QUICK: 200, 2,000, 5,000).
func parseScaleSizes(quick bool) ([]int, error) {
	if v := os.Getenv("BENCH_SCALE_SIZES"); v != "" {
		var out []int
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 2*scaleConc+scaleOwn+100 {
				return nil, fmt.Errorf("BENCH_SCALE_SIZES: %q is not a size of at least %d images", f, 2*scaleConc+scaleOwn+100)
			}
			out = append(out, n)
		}
		return out, nil
	}
	if quick {
		return []int{200, 2000, 5000}, nil
	}
	return []int{500, 5000, 50000}, nil
}

// scaleSizes is parseScaleSizes for the run's heading (caseScale reports
// a bad BENCH_SCALE_SIZES).
func scaleSizes(quick bool) []int {
	sizes, _ := parseScaleSizes(quick)
	return sizes
}

// thousands writes n with a comma every three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// caseScale is case 11 (see the top of this file).
func caseScale(ctx context.Context, bin string, quick bool, logf func(string, ...any)) ([]row, error) {
	var res []*scaleResult
	var failed []string
	sizes, err := parseScaleSizes(quick)
	if err != nil {
		return nil, err
	}
	// The first start on a new data-root migrates its images.json: seconds
	// at 50,000 images, more on a loaded machine.
	pingDeadline = 10 * time.Minute
	for _, n := range sizes {
		logf("case 11: %s images", thousands(n))
		r, err := runScale(ctx, bin, n, logf)
		if err != nil {
			// Keep what the smaller sizes measured; the failure is reported.
			failed = append(failed, fmt.Sprintf("%s images: %v", thousands(n), err))
			logf("case 11: %s images FAILED: %v", thousands(n), err)
			break
		}
		res = append(res, r)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	rows := scaleRows(res)
	if len(failed) > 0 {
		return rows, fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return rows, nil
}

func timedStart(bin, root string, args ...string) (*wharfd, time.Duration, error) {
	t := time.Now()
	d, err := startWharfd(bin, root, args...)
	return d, time.Since(t), err
}

// call sends one request and checks its status; it returns the time from
// the request to the end of the body, and the body.
func call(ctx context.Context, d *wharfd, method, path string, hdr map[string]string, body []byte, want int) (time.Duration, []byte, error) {
	var rd *bytes.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	t := time.Now()
	var status int
	var b []byte
	var err error
	if rd != nil {
		status, b, err = d.do(ctx, method, path, hdr, rd)
	} else {
		status, b, err = d.do(ctx, method, path, hdr, nil)
	}
	el := time.Since(t)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if status != want {
		return 0, nil, fmt.Errorf("%s %s: %d %.300s", method, path, status, b)
	}
	return el, b, nil
}

func tinyTar(content string) []byte {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "scale", Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)})
	tw.Write([]byte(content))
	tw.Close()
	return tb.Bytes()
}

func medianF(v []float64) float64 {
	ds := make([]time.Duration, len(v))
	for i, x := range v {
		ds[i] = time.Duration(x * 1e6)
	}
	m, _ := stats(ds)
	return float64(m) / 1e6
}

// scaleRows turns the sizes' results into rows: per measure, one row per
// size and a growth row smallest → largest.
func scaleRows(res []*scaleResult) []row {
	var rows []row
	small, large := res[0], res[len(res)-1]
	sizeRatio := float64(large.n) / float64(small.n)
	growthName := fmt.Sprintf("growth %s → %s", thousands(small.n), thousands(large.n))
	full := large.n == 50000
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }

	type measure struct {
		name   string
		get    func(*scaleResult) []time.Duration
		growth float64 // growth limit; 0: informational
		gtext  string
		note   string
	}
	flat := func(name string, get func(*scaleResult) []time.Duration, note string) measure {
		return measure{name, get, 1.5, "≤1.5× (flat)", note}
	}
	measures := []measure{
		{name: "start-up to first _ping (median of 3)", get: func(r *scaleResult) []time.Duration { return r.starts }},
		flat("inspect by name", func(r *scaleResult) []time.Duration { return r.byName }, ""),
		flat("inspect by 12-char short ID", func(r *scaleResult) []time.Duration { return r.byID }, ""),
	}
	for _, v := range scaleListVariants {
		key := v.key
		get := func(r *scaleResult) []time.Duration { return r.lists[key] }
		if v.want < 0 {
			measures = append(measures, measure{v.name, get, sizeRatio,
				fmt.Sprintf("≤%.0f× (linear: returns %.0f× more)", sizeRatio, sizeRatio), ""})
		} else {
			measures = append(measures, measure{v.name, get, 1.5,
				fmt.Sprintf("≤1.5× (returns %d at every size)", v.want), ""})
		}
	}
	measures = append(measures,
		flat("tag (POST /images/{name}/tag)", func(r *scaleResult) []time.Duration { return r.tag }, ""),
		flat("untag (DELETE of a second tag, noprune)", func(r *scaleResult) []time.Duration { return r.untag }, ""),
		flat("record step (import of a tiny tar, layer already stored)", func(r *scaleResult) []time.Duration { return r.record }, ""),
		measure{name: "rmi with GC (image owning its layer)", get: func(r *scaleResult) []time.Duration { return r.rmi },
			note: "no target for rmi"},
	)
	for _, m := range measures {
		for _, r := range res {
			med, p95 := stats(m.get(r))
			rw := row{Case: "11", Name: fmt.Sprintf("%s, %s images", m.name, thousands(r.n)), Unit: "ms",
				N: len(m.get(r)), Median: ms(med), P95: ms(p95)}
			if r != small {
				sm, _ := stats(m.get(small))
				rw.Baseline, rw.BaseName, rw.Ratio = ms(sm), "same at "+thousands(small.n), ms(med)/ms(sm)
			}
			if m.name == "start-up to first _ping (median of 3)" {
				rw.Note = fmt.Sprintf("prepared in %.1f s (images.json %.1f MB), not measured; first start after preparation (migrates, writes index.json) %.0f ms, not counted; the background scrub after the start took %.0f ms",
					r.prep.Seconds(), float64(r.recordsBytes)/1e6, ms(r.firstStart), ms(r.scrub))
				if r.n == 50000 {
					rw.Target, rw.Pass = "≤1 s at 50,000", pass(ms(med) <= 1000)
				}
			}
			if m.name == "GET /images/json, no filter (returns all)" {
				rw.Note = fmt.Sprintf("first list after start (reads every manifest and config) %.0f ms, not counted", ms(r.listCold))
			}
			if strings.HasPrefix(m.name, "rmi") && r.gcLeft > 0 {
				rw.Note = fmt.Sprintf("%d of %d owned layers still on disk after rmi", r.gcLeft, len(r.rmi))
			}
			rows = append(rows, rw)
		}
		sm, _ := stats(m.get(small))
		lm, _ := stats(m.get(large))
		g := row{Case: "11", Name: m.name + ", " + growthName, Unit: "×", N: len(m.get(large)),
			Median: ms(lm) / ms(sm), Baseline: ms(sm), BaseName: thousands(small.n) + " images, ms", Ratio: ms(lm) / ms(sm), Note: m.note}
		if m.growth > 0 {
			g.Target, g.Pass = m.gtext, pass(g.Ratio <= m.growth)
		}
		rows = append(rows, g)
	}

	// 64 concurrent tags against one tag.
	for _, r := range res {
		one, _ := stats(r.single)
		wall, _ := stats(r.conc)
		ratio := medianF(r.concRatio)
		rows = append(rows, row{Case: "11", Name: fmt.Sprintf("64 concurrent tags of distinct images (wall), %s images", thousands(r.n)),
			Unit: "ms", N: len(r.conc), Median: ms(wall), Baseline: ms(one), BaseName: "one tag", Ratio: ratio,
			Target: "≤4× one tag", Pass: pass(ratio <= 4),
			Note: fmt.Sprintf("ratio is the median over %d rounds of wall ÷ the median of 3 single tags just before; 64 one after another would be 64×; meta.db commits per round of 64 (wharf_store_commits_total): %v", len(r.conc), r.concCommits)})
	}
	// Where the ratio's floor is on this machine: the 64 tags' CPU spread
	// over every core is a wall no commit scheme can go under; what the
	// measured wall adds to it is waiting (fsync, a serial step).
	for _, r := range res {
		one, _ := stats(r.single)
		floor, _ := stats(r.concFloor)
		server, _ := stats(r.concServer)
		rows = append(rows, row{Case: "11", Name: fmt.Sprintf("64 concurrent tags: CPU ÷ %d cores (the wall's floor), %s images", runtime.NumCPU(), thousands(r.n)),
			Unit: "ms", N: len(r.concFloor), Median: ms(floor), Baseline: ms(one), BaseName: "one tag", Ratio: ms(floor) / ms(one),
			Note: fmt.Sprintf("wharfd's threads (schedstat) and the bench process (getrusage) over each round of 64, ÷ %d cores; a tag costs %.0f µs of CPU (wharfd %.0f µs of it) against one tag's %.0f µs of wall: the ratio cannot fall under %.1f× here whatever the commits do",
				runtime.NumCPU(), float64(floor.Microseconds())*float64(runtime.NumCPU())/scaleConc, float64(server.Microseconds()), float64(one.Microseconds()), ms(floor)/ms(one))})
	}
	sw, _ := stats(small.conc)
	lw, _ := stats(large.conc)
	rows = append(rows, row{Case: "11", Name: "64 concurrent tags (wall), " + growthName, Unit: "×", N: len(large.conc),
		Median: ms(lw) / ms(sw), Baseline: ms(sw), BaseName: thousands(small.n) + " images, ms", Ratio: ms(lw) / ms(sw)})

	// Peak RSS.
	for _, r := range res {
		rw := row{Case: "11", Name: fmt.Sprintf("wharfd peak RSS (VmHWM) over the run, %s images", thousands(r.n)), Unit: "MiB", N: 1, Median: mb(r.rss),
			Note: fmt.Sprintf("the largest step's VmHWM (reset before each step); per step, MiB: %s; step times: %s",
				strings.Join(r.stepPeaks, ", "), strings.Join(r.stepSecs, ", "))}
		if r != small {
			rw.Baseline, rw.BaseName, rw.Ratio = mb(small.rss), "same at "+thousands(small.n), float64(r.rss)/float64(small.rss)
		}
		if r.n == 50000 {
			rw.Target, rw.Pass = "≤100 MiB at 50,000", pass(mb(r.rss) <= 100)
		}
		rows = append(rows, rw)
	}
	for _, r := range res {
		rows = append(rows, row{Case: "11", Name: fmt.Sprintf("wharfd largest RssAnon / RssFile sampled (10 ms), %s images", thousands(r.n)), Unit: "MiB", N: 1,
			Median: mb(r.maxAnon), Note: fmt.Sprintf("RssAnon (heap, stacks) %.1f MiB; RssFile (meta.db's mmap, the binary) %.1f MiB; sampled from the measured start's _ping to the end, so a peak between two samples is missed", mb(r.maxAnon), mb(r.maxFile))})
	}
	rows = append(rows, row{Case: "11", Name: "wharfd peak RSS, " + growthName, Unit: "×", N: 1,
		Median: float64(large.rss) / float64(small.rss), Baseline: mb(small.rss), BaseName: thousands(small.n) + " images, MiB",
		Ratio: float64(large.rss) / float64(small.rss)})
	if !full {
		rows = append(rows, row{Case: "11", Name: fmt.Sprintf("(largest size run: %s images; the start-up and RSS targets are set at 50,000)", thousands(large.n)), Unit: "-"})
	}
	return rows
}

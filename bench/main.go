//go:build bench

// Command bench is wharf's benchmark suite: `make bench` runs it.
// It starts the real distribution registry in token mode behind counting
// proxies and an RTT proxy, wharfd on temp data-roots, pushes its own
// images, and prints every figure beside a baseline measured in the same run.
//
// Environment: BENCH_QUICK=1 a smoke run (fewer iterations, 32 MiB pull);
// BENCH_RTT (default 25ms) the round-trip time of case 1, where each request
// costs one RTT (the model of the figures) and, unless BENCH_HANDSHAKE=0, the cold
// cases run again with every new connection costing one more RTT (a TCP
// handshake); BENCH_CASES=1,2,3,4,5,6,7,8,9,10 the cases to run (9: the
// flaky link, wharf beside dockerd 20.10, crane and skopeo;
// 10: the cost of verifying signatures, with the real cosign;
// 11: the store at scale, at 500, 5,000 and 50,000 images — not
// in the default set, as 50,000 images take many minutes: BENCH_SCALE=1
// adds it, or list it in BENCH_CASES; 12: newer versions and the watch;
// 13: sync of 20 images, beside skopeo sync and regsync; 14: ls and cat
// of a remote image beside crane export and regctl get-file; 15: diff and
// packages of a remote image beside crane pull and a comparison, and
// syft);
// WHARFD the daemon binary (default bin/wharfd).
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	started := time.Now()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	quick := os.Getenv("BENCH_QUICK") == "1"
	rtt := 25 * time.Millisecond
	if v := os.Getenv("BENCH_RTT"); v != "" {
		if rtt, err = time.ParseDuration(v); err != nil {
			return fmt.Errorf("BENCH_RTT: %w", err)
		}
	}
	handshake := os.Getenv("BENCH_HANDSHAKE") != "0"
	cases := map[string]bool{"1": true, "2": true, "3": true, "4": true, "5": true, "6": true, "7": true, "8": true, "9": true, "10": true, "12": true, "13": true, "14": true, "15": true}
	if os.Getenv("BENCH_SCALE") == "1" {
		cases["11"] = true
	}
	if v := os.Getenv("BENCH_CASES"); v != "" {
		cases = map[string]bool{}
		for _, c := range strings.Split(v, ",") {
			cases[strings.TrimSpace(c)] = true
		}
	}
	bin := os.Getenv("WHARFD")
	if bin == "" {
		bin = filepath.Join(root, "bin", "wharfd")
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s: %w (run make build)", bin, err)
	}

	it := struct{ remote, warm, pull, list, inspect int }{9, 20, 5, 20, 200}
	tpDur := 3 * time.Second
	benchtime := "1s"
	if quick {
		it = struct{ remote, warm, pull, list, inspect int }{2, 5, 1, 5, 30}
		tpDur = time.Second
		benchtime = "200ms"
	}

	timeout := 20 * time.Minute
	if cases["11"] {
		timeout += 60 * time.Minute // case 11 at 50,000 images
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rep := &report{Started: started.UTC(), Quick: quick, RTTms: ms(rtt), Handshk: handshake,
		Commit: gitDescribe(root), GoOS: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
	step := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%5.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
	}
	collect := func(name string, rows []row, err error) {
		if err != nil {
			step("%s: FAILED: %v", name, err)
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s: %v", name, err))
			return
		}
		rep.Rows = append(rep.Rows, rows...)
	}

	if cases["1"] || cases["2"] || cases["3"] || cases["4"] || cases["6"] || cases["12"] {
		step("starting registry (token auth) and RTT proxies")
		e, err := newEnv(rtt, false, bin)
		if err != nil {
			return err
		}
		defer e.close()
		step("pushing fixtures")
		f, err := pushFixtures(ctx, e, quick)
		if err != nil {
			return fmt.Errorf("fixtures: %w", err)
		}
		if cases["1"] {
			step("case 1: remote inspect at RTT %s", rtt)
			e.setRTT(rtt)
			rows, err := caseRemote(ctx, e, f, it.remote, it.warm, false)
			collect("case 1", rows, err)
			if handshake {
				step("case 1: cold remote inspect with TCP handshakes at 1 RTT")
				rows, err := caseRemote(ctx, e, f, it.remote, it.warm, true)
				collect("case 1 (handshakes)", rows, err)
			}
			if rtt != 0 {
				step("case 1: remote inspect at RTT 0 (wharf's own time)")
				e.setRTT(0)
				rows, err := caseRemote(ctx, e, f, it.remote, it.warm, false)
				collect("case 1 (RTT 0)", rows, err)
			}
		}
		if cases["2"] {
			step("case 2: throughput at RTT 0")
			rows, err := caseThroughput(ctx, e, f, tpDur)
			collect("case 2", rows, err)
		}
		if cases["3"] {
			step("case 3: pull at RTT 0")
			rows, err := casePull(ctx, e, f, it.pull)
			collect("case 3", rows, err)
		}
		if cases["4"] {
			step("case 4: local store with 500 and 5,000 images")
			rows, err := caseLocal(ctx, e, it.list, it.inspect)
			collect("case 4", rows, err)
		}
		if cases["6"] {
			step("case 6: update check of %d local images at RTT %s", checkTags, rtt)
			err := pushCheckFixtures(ctx, e)
			if err == nil {
				e.setRTT(rtt)
				var rows []row
				rows, err = caseCheckRemote(ctx, e, it.remote)
				collect("case 6", rows, err)
			} else {
				collect("case 6", nil, err)
			}
		}
		if cases["12"] {
			step("case 12: newer versions of %d tags in %d repositories at RTT %s, and the watch's CPU at a 1s interval", newerRepos*newerLocalPerRep, newerRepos, rtt)
			e.setRTT(rtt)
			rows, err := caseNewer(ctx, e, it.remote, quick)
			rep.Rows = append(rep.Rows, rows...)
			if err != nil {
				collect("case 12", nil, err)
			}
		}
	}
	if cases["5"] {
		step("case 5: go test -bench (hot paths)")
		rows, err := caseGoBench(ctx, root, benchtime)
		collect("case 5", rows, err)
	}
	if cases["7"] {
		step("case 7: registry → registry copy beside crane and skopeo, at RTT 0 and %s", rtt)
		iters := 3
		if quick {
			iters = 1
		}
		rows, err := caseCopy(ctx, root, rtt, iters, quick, bin)
		collect("case 7", rows, err)
	}
	if cases["8"] {
		step("case 8: a fleet of 3 wharfd behind a pull-through proxy, beside the same without it")
		rows, err := caseFleet(ctx, bin, rtt)
		collect("case 8", rows, err)
	}
	if cases["9"] {
		step("case 9: the flaky link: pulls through cut blob GETs, wharf beside dockerd 20.10, crane and skopeo")
		rows, err := caseFlaky(ctx, root, bin, quick)
		collect("case 9", rows, err)
	}
	if cases["10"] {
		step("case 10: the cost of verifying: cosign-signed images under a sigstoreSigned policy at RTT %s, beside no policy", rtt)
		rows, err := caseTrust(ctx, root, bin, rtt, quick)
		collect("case 10", rows, err)
	}
	if cases["13"] {
		step("case 13: sync of 20 images: wharf sync beside skopeo sync and regsync, at RTT %s", rtt)
		rows, err := caseSync(ctx, root, rtt, bin)
		collect("case 13", rows, err)
	}
	if cases["14"] {
		step("case 14: inside an image without pulling it: ls and cat --remote beside crane export and regctl get-file, at RTT 0 and %s", rtt)
		rows, err := caseContents(ctx, root, rtt, quick, bin)
		collect("case 14", rows, err)
	}
	if cases["15"] {
		step("case 15: what changed: diff and packages --remote beside crane pull + compare and syft, at RTT 0 and %s", rtt)
		rows, err := caseWhatChanged(ctx, root, rtt, quick, bin)
		collect("case 15", rows, err)
	}
	if cases["11"] {
		step("case 11: the store at scale: %v images", scaleSizes(quick))
		rows, err := caseScale(ctx, bin, quick, step)
		rep.Rows = append(rep.Rows, rows...) // what the smaller sizes measured, even when a larger one failed
		if err != nil {
			collect("case 11", nil, err)
		}
	}
	rep.Seconds = time.Since(started).Seconds()

	fmt.Println()
	printTable(os.Stdout, rep.Rows)
	for _, r := range rep.Rows {
		if r.Note != "" {
			fmt.Printf("  note %s %s: %s\n", r.Case, strings.TrimSpace(r.Name), r.Note)
		}
	}
	miss := 0
	for _, r := range rep.Rows {
		if r.Pass != nil && !*r.Pass {
			miss++
		}
	}
	fmt.Printf("\n%d rows, %d MISS, %d failed cases; %.0fs; RTT %s, handshake RTT %v, quick %v\n",
		len(rep.Rows), miss, len(rep.Failures), rep.Seconds, rtt, handshake, quick)
	if err := writeJSON(filepath.Join(root, "bench", "results.json"), rep); err != nil {
		return err
	}
	if md := os.Getenv("BENCH_MARKDOWN"); md != "" {
		if err := os.WriteFile(md, []byte(markdownTable(rep.Rows)), 0o644); err != nil {
			return err
		}
	}
	fmt.Println("wrote bench/results.json")
	if len(rep.Failures) > 0 {
		return fmt.Errorf("%d case(s) failed: %s", len(rep.Failures), strings.Join(rep.Failures, "; "))
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the wharf module")
	}
	return filepath.Dir(mod), nil
}

func gitDescribe(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

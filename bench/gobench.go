//go:build bench

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// goBenchPkgs hold the hot-path benchmarks (files *_bench_test.go). Each
// BenchmarkHotX may have a BenchmarkHotXFloor: the least work that answer
// needs (e.g. json.Unmarshal alone), measured in the same run.
var goBenchPkgs = []string{"./registry", "./graph", "./api/server"}

var benchLine = regexp.MustCompile(`^(BenchmarkHot\S*?)(?:-\d+)?\s+(\d+)\s+([\d.]+) ns/op(?:\s+[\d.]+ MB/s)?(?:\s+(\d+) B/op\s+(\d+) allocs/op)?`)

type goBench struct {
	name          string
	n             int
	ns            float64
	bytes, allocs int
}

// caseGoBench is case 5: `go test -bench` over the hot paths.
func caseGoBench(ctx context.Context, root, benchtime string) ([]row, error) {
	args := append([]string{"test", "-run", "^$", "-bench", "^BenchmarkHot", "-benchmem", "-benchtime", benchtime, "-count", "1"}, goBenchPkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	var all []goBench
	byName := map[string]goBench{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		b := goBench{name: strings.TrimPrefix(m[1], "Benchmark")}
		b.n, _ = strconv.Atoi(m[2])
		b.ns, _ = strconv.ParseFloat(m[3], 64)
		b.bytes, _ = strconv.Atoi(m[4])
		b.allocs, _ = strconv.Atoi(m[5])
		all = append(all, b)
		byName[b.name] = b
	}
	var rows []row
	for _, b := range all {
		if strings.HasSuffix(b.name, "Floor") {
			continue
		}
		r := row{Case: "5", Name: b.name, Unit: "µs/op", Median: b.ns / 1000, N: b.n,
			Note: fmt.Sprintf("%d B/op, %d allocs/op", b.bytes, b.allocs)}
		if f, ok := byName[b.name+"Floor"]; ok {
			r.Baseline, r.BaseName, r.Ratio = f.ns/1000, f.name, b.ns/f.ns
			r.Note += fmt.Sprintf("; floor %d B/op, %d allocs/op", f.bytes, f.allocs)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no BenchmarkHot results in:\n%s", out.String())
	}
	return rows, nil
}

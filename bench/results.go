//go:build bench

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one line of the table and of results.json. Durations are in
// milliseconds; Unit says otherwise (inspects/s, MiB, ns/op …).
type row struct {
	Case     string  `json:"case"`
	Name     string  `json:"name"`
	Reqs     string  `json:"requests,omitempty"` // "registry/token"
	Conns    string  `json:"new_conns,omitempty"`
	Median   float64 `json:"median"`
	P95      float64 `json:"p95,omitempty"`
	Unit     string  `json:"unit"`
	Baseline float64 `json:"baseline,omitempty"`
	BaseName string  `json:"baseline_name,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	Target   string  `json:"target,omitempty"`
	Pass     *bool   `json:"pass,omitempty"` // nil: informational
	N        int     `json:"n"`
	Note     string  `json:"note,omitempty"`
}

type report struct {
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Quick    bool      `json:"quick"`
	RTTms    float64   `json:"rtt_ms"`
	Handshk  bool      `json:"handshake_rtt"`
	Commit   string    `json:"commit"`
	GoOS     string    `json:"machine"`
	Rows     []row     `json:"rows"`
	Failures []string  `json:"failures,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// stats returns the median and the 95th percentile (nearest rank).
func stats(ds []time.Duration) (med, p95 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	n := len(s)
	if n%2 == 1 {
		med = s[n/2]
	} else {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	idx := (95*n + 99) / 100
	if idx < 1 {
		idx = 1
	}
	return med, s[idx-1]
}

// pairedRatio is the median of a[i]/b[i]: each measurement (a time, or
// bytes) against the baseline taken right beside it, so that a change in
// the machine's speed during the run cancels out.
func pairedRatio[T time.Duration | int64](a, b []T) float64 {
	n := min(len(a), len(b))
	if n == 0 {
		return 0
	}
	r := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		if b[i] > 0 {
			r = append(r, float64(a[i])/float64(b[i]))
		}
	}
	if len(r) == 0 {
		return 0
	}
	sort.Float64s(r)
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

func pass(ok bool) *bool { return &ok }

func passText(p *bool) string {
	switch {
	case p == nil:
		return "-"
	case *p:
		return "PASS"
	}
	return "MISS"
}

func num(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printTable writes the rows as an aligned text table.
func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\trequests reg/tok\tnew conns\tmedian\tp95\tunit\tbaseline\tratio\ttarget\tresult")
	for _, r := range rows {
		base := num(r.Baseline)
		if r.BaseName != "" && r.Baseline != 0 {
			base += " (" + r.BaseName + ")"
		}
		ratio := "-"
		if r.Ratio != 0 {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Case, r.Name, orDash(r.Reqs), orDash(r.Conns),
			num(r.Median), num(r.P95), r.Unit, base, ratio, orDash(r.Target), passText(r.Pass))
	}
	tw.Flush()
}

// markdownTable is the same table for docs/performance.md.
func markdownTable(rows []row) string {
	var b strings.Builder
	b.WriteString("| case | requests reg/tok | new conns | median | p95 | unit | baseline | ratio | target | result |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		base := num(r.Baseline)
		if r.BaseName != "" && r.Baseline != 0 {
			base += " (" + r.BaseName + ")"
		}
		ratio := "-"
		if r.Ratio != 0 {
			ratio = fmt.Sprintf("%.2f", r.Ratio)
		}
		fmt.Fprintf(&b, "| %s %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Case, r.Name, orDash(r.Reqs), orDash(r.Conns),
			num(r.Median), num(r.P95), r.Unit, base, ratio, strings.ReplaceAll(orDash(r.Target), "|", "/"), passText(r.Pass))
	}
	return b.String()
}

func writeJSON(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

//go:build bench

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// Case 9: the flaky link, side by side. A CutProxy
// (internal/hostile) in front of the real registry (anonymous, plain HTTP,
// so every client pulls without credentials) cuts the first GET(s) of each
// blob after cutAfter bytes of body; for 1, 3 and 5 cuts per blob, and
// through a registry that ignores Range (1 cut), each client pulls a fresh
// 3-layer image of random bytes (8 MiB a layer; 2 MiB with BENCH_QUICK) from
// a new repository, so that none has any of its blobs. For each client the
// row says whether it pulled (or the first line of its error) and the blob
// bytes the proxy passed on ÷ the image's size. The clients: wharf (a fresh
// wharfd per pull), dockerd 20.10 (Debian's docker.io, when installed and
// the bench runs as root; the bench starts its own on temp dirs), `crane
// pull` and `skopeo copy … oci:`. Only wharf's rows have targets (those of
// integration-cli's TestPullThroughCuts); the others are reported.

const flakyLayers = 3

// flakyColumn is one column of the flaky-link table.
type flakyColumn struct {
	title       string // the markdown column
	name        string // the row name's part
	cuts        int
	ignoreRange bool
}

var flakyColumns = []flakyColumn{
	{"1 cut", "1 cut per blob", 1, false},
	{"3 cuts", "3 cuts per blob", 3, false},
	{"5 cuts", "5 cuts per blob", 5, false},
	{"ignores Range", "registry ignores Range, 1 cut per blob", 1, true},
}

// flakyResult is one client's pull through one column.
type flakyResult struct {
	skipped string // reason; the pull did not run
	err     string // first line of the error; "" when it pulled
	bytes   int64  // blob body bytes passed by the proxy
	size    int64  // the image's size (its layers)
	gets    int    // blob GETs seen by the proxy
	ranged  int    // of which with a Range header
	took    time.Duration
}

func (r flakyResult) ratio() float64 {
	if r.size == 0 {
		return 0
	}
	return float64(r.bytes) / float64(r.size)
}

// flakyClient pulls ref (HOST/repo:tag); start prepares it once (a reason to
// skip it, or an error that fails the case), stop ends what start started.
type flakyClient struct {
	name  string
	skip  string
	pull  func(ctx context.Context, ref string) error
	close func()
}

func caseFlaky(ctx context.Context, root, wharfdBin string, quick bool) ([]row, error) {
	layerSize, cutAfter := 8<<20, int64(1<<20)
	if quick {
		layerSize, cutAfter = 2<<20, 256<<10
	}
	reg, err := testregistry.Start(testregistry.Options{})
	if err != nil {
		return nil, err
	}
	defer reg.Close()
	proxy, err := hostile.NewCutProxy(reg.DirectURL)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()

	clients := []*flakyClient{flakyWharf(wharfdBin)}
	dockerd, err := flakyDockerd(ctx, proxy.Host)
	if err != nil {
		return nil, err
	}
	clients = append(clients, dockerd)
	clients = append(clients, flakyCrane(ctx, root), flakySkopeo(ctx))
	defer func() {
		for _, c := range clients {
			if c.close != nil {
				c.close()
			}
		}
	}()

	results := map[string]map[int]flakyResult{}
	for _, c := range clients {
		results[c.name] = map[int]flakyResult{}
	}
	for col, fc := range flakyColumns {
		for ci, c := range clients {
			if c.skip != "" {
				results[c.name][col] = flakyResult{skipped: c.skip}
				continue
			}
			img, err := testregistry.NewImage(testregistry.ImageOptions{Layers: flakyLayers, LayerSize: layerSize})
			if err != nil {
				return nil, err
			}
			repo := fmt.Sprintf("flaky/c%d-%d", col, ci)
			if err := reg.Client().PushImage(ctx, repo, "1", img); err != nil {
				return nil, fmt.Errorf("push %s: %w", repo, err)
			}
			proxy.SetCuts(fc.cuts, cutAfter, fc.ignoreRange)
			pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			start := time.Now()
			err = c.pull(pctx, proxy.Host+"/"+repo+":1")
			took := time.Since(start)
			cancel()
			proxy.CloseClientConnections()
			r := flakyResult{bytes: proxy.BlobBytes.Load(), size: img.Size(), took: took}
			for _, rg := range proxy.Ranges() {
				r.gets++
				if rg != "" {
					r.ranged++
				}
			}
			if err != nil {
				r.err = firstLine(err.Error())
			}
			results[c.name][col] = r
		}
	}

	var rows []row
	for _, c := range clients {
		for col, fc := range flakyColumns {
			r := results[c.name][col]
			rw := row{Case: "9", Name: fmt.Sprintf("flaky link, %s — %s", fc.name, c.name), Unit: "× image", N: 1}
			switch {
			case r.skipped != "":
				rw.N = 0
				rw.Note = "skipped: " + r.skipped
			default:
				rw.Median = r.ratio()
				outcome := "pulls"
				if r.err != "" {
					outcome = "fails: " + r.err
				}
				rw.Note = fmt.Sprintf("%s; %d of %d bytes in %d blob GETs (%d with Range) in %.1fs",
					outcome, r.bytes, r.size, r.gets, r.ranged, r.took.Seconds())
			}
			if c.name == "wharf" && r.skipped == "" {
				limit := 1.10
				if fc.ignoreRange {
					// A 200 to the Range: each layer's first cutAfter bytes come twice.
					limit = 1 + float64(cutAfter*flakyLayers)/float64(r.size) + 0.02
				}
				rw.Target = fmt.Sprintf("pulls, ≤%.2f×", limit)
				rw.Pass = pass(r.err == "" && r.ratio() <= limit)
			}
			rows = append(rows, rw)
		}
	}
	fmt.Printf("\nCase 9, the flaky link: %d layers × %d MiB, each blob GET cut after %d KiB; blob bytes at the proxy ÷ image size\n\n",
		flakyLayers, layerSize>>20, cutAfter>>10)
	fmt.Print(flakyMarkdown(clients, results))
	return rows, nil
}

// flakyMarkdown is the flaky-link table: a row per client, a column per cut.
func flakyMarkdown(clients []*flakyClient, results map[string]map[int]flakyResult) string {
	var b strings.Builder
	b.WriteString("| client |")
	for _, fc := range flakyColumns {
		b.WriteString(" " + fc.title + " |")
	}
	b.WriteString("\n|---|")
	for range flakyColumns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, c := range clients {
		b.WriteString("| " + c.name + " |")
		for col := range flakyColumns {
			r := results[c.name][col]
			var cell string
			switch {
			case r.skipped != "":
				cell = "skipped"
			case r.err != "":
				e := r.err
				if len(e) > 90 {
					e = e[:90] + "…"
				}
				cell = fmt.Sprintf("fails: %s (%.2f×)", strings.ReplaceAll(e, "|", "/"), r.ratio())
			default:
				cell = fmt.Sprintf("pulls %.2f×", r.ratio())
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	for _, c := range clients {
		if c.skip != "" {
			fmt.Fprintf(&b, "\n%s skipped: %s\n", c.name, c.skip)
		}
	}
	return b.String()
}

// firstLine is the first non-empty line of s; for a logrus line (skopeo's
// `level=fatal msg="…"`) the message.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if i := strings.Index(l, ` msg="`); i >= 0 {
			if m, err := strconv.Unquote(l[i+5:]); err == nil {
				return m
			}
		}
		return l
	}
	return strings.TrimSpace(s)
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

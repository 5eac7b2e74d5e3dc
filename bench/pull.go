//go:build bench

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// pull is POST /images/create?fromImage=NAME&tag=TAG, reading the progress
// stream to its end; an errorDetail line is an error.
func (e *env) pull(ctx context.Context, d *wharfd, name, tag string) (time.Duration, error) {
	q := url.Values{"fromImage": {name}, "tag": {tag}}
	what := "pull " + name + ":" + tag
	return d.stream(ctx, what, "/v1.50/images/create?"+q.Encode(), http.Header{"X-Registry-Auth": {e.auth}}, func(line []byte) error {
		var m struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(line, &m) == nil && m.Error != "" {
			return fmt.Errorf("%s: %s", what, m.Error)
		}
		return nil
	})
}

// download fetches every layer of img in parallel to io.Discard with a plain
// Go HTTP client and a bearer token: the floor for a pull.
func (e *env) download(ctx context.Context, f *fixtures) (time.Duration, error) {
	return e.eachLayer(ctx, f, func(hc *http.Client, tok string, l testregistry.Blob) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.host+"/v2/bench/big/blobs/"+l.Digest, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err == nil && (resp.StatusCode != http.StatusOK || n != int64(len(l.Data))) {
			err = fmt.Errorf("blob %s: status %d, %d bytes", l.Digest, resp.StatusCode, n)
		}
		return err
	})
}

// downloadStore is download plus what a pull must add: each layer's sha256
// computed while streaming, written to a temp file on the data-root's file
// system, fsynced, renamed into place and the directory fsynced. The floor
// for the whole job with a plain Go client, all layers in parallel.
func (e *env) downloadStore(ctx context.Context, f *fixtures, dir string) (time.Duration, error) {
	return e.eachLayer(ctx, f, func(hc *http.Client, tok string, l testregistry.Blob) error {
		return fetchStore(ctx, hc, "http://"+e.host+"/v2/bench/big/blobs/"+l.Digest, tok, l.Digest, dir)
	})
}

// eachLayer times fetch run on every layer of the big image in parallel, with
// one plain Go client and one bearer token (fetched inside the timing, as a
// pull must).
func (e *env) eachLayer(ctx context.Context, f *fixtures, fetch func(hc *http.Client, tok string, l testregistry.Blob) error) (time.Duration, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer hc.CloseIdleConnections()
	start := time.Now()
	tok, err := e.token(ctx, hc, "bench/big")
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(f.big.Layers))
	for i, l := range f.big.Layers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fetch(hc, tok, l)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

func fetchStore(ctx context.Context, hc *http.Client, u, tok, want, dir string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", u, resp.StatusCode)
	}
	tmp, err := os.CreateTemp(dir, "blob-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), resp.Body); err != nil {
		tmp.Close()
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != want {
		tmp.Close()
		return fmt.Errorf("digest %s, want %s", got, want)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	final := filepath.Join(dir, want[len("sha256:"):])
	if err := os.Rename(tmp.Name(), final); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// casePull is case 3: pull of the 8-layer image at RTT 0 into a fresh
// daemon, against the parallel download of its blobs, then a second pull.
func casePull(ctx context.Context, e *env, f *fixtures, iters int) ([]row, error) {
	e.setRTT(0)
	var walls, bases, floors, walls8 []time.Duration
	var peak int64
	var first, second counts
	var secondLat []time.Duration
	var total int64
	for _, l := range f.big.Layers {
		total += int64(len(l.Data))
	}
	anchors, anchorNotes := newPullAnchors(ctx, e)
	defer anchors.cleanup()
	var cranes, skopeos, wallsC, wallsS []time.Duration
	// CPU time per pull (the process's user + system): the machine's load
	// does not change it, so it says what each tool costs where the wall
	// times of a shared machine cannot.
	var cpuW, cpuC, cpuS []time.Duration
	for i := 0; i < iters; i++ {
		// Each measurement starts with nothing left to write back: crane
		// leaves 256 MiB dirty in the page cache, and whoever came next
		// would pay for its writeback.
		syscall.Sync()
		b, err := e.download(ctx, f)
		if err != nil {
			return nil, err
		}
		bases = append(bases, b)
		dir, err := os.MkdirTemp("", "wharf-bench-floor-")
		if err != nil {
			return nil, err
		}
		fl, err := e.downloadStore(ctx, f, dir)
		os.RemoveAll(dir)
		if err != nil {
			return nil, err
		}
		floors = append(floors, fl)
		if anchors.crane != "" {
			syscall.Sync()
			c, cpu, err := anchors.cranePull(ctx, e)
			if err != nil {
				return nil, err
			}
			cranes, cpuC = append(cranes, c), append(cpuC, cpu)
		}
		if anchors.skopeo != "" {
			syscall.Sync()
			c, cpu, err := anchors.skopeoCopy(ctx, e)
			if err != nil {
				return nil, err
			}
			skopeos, cpuS = append(skopeos, c), append(cpuS, cpu)
		}
		syscall.Sync()
		d, root, err := freshDaemon(e)
		if err != nil {
			return nil, err
		}
		err = func() error {
			e.reset()
			cpu0, _ := d.cpuTime()
			w, err := e.pull(ctx, d, e.host+"/bench/big", "1")
			if err != nil {
				return err
			}
			cpu1, _ := d.cpuTime()
			walls, cpuW = append(walls, w), append(cpuW, cpu1-cpu0)
			if anchors.crane != "" {
				wallsC = append(wallsC, w)
			}
			if anchors.skopeo != "" {
				wallsS = append(wallsS, w)
			}
			first = e.counts()
			hwm, err := d.peakRSS()
			if err != nil {
				return err
			}
			peak = max(peak, hwm)
			e.reset()
			s, err := e.pull(ctx, d, e.host+"/bench/big", "1")
			if err != nil {
				return err
			}
			secondLat = append(secondLat, s)
			c := e.counts()
			if c.total() > second.total() || i == 0 {
				second = c
			}
			return nil
		}()
		dropDaemon(d, root)
		if err != nil {
			return nil, err
		}
	}
	// The same pull with as many parallel downloads as the floors use.
	for i := 0; i < iters; i++ {
		root, err := os.MkdirTemp("", "wharf-bench-root-")
		if err != nil {
			return nil, err
		}
		d, err := startWharfd(e.wharfd, root, "--max-concurrent-downloads", fmt.Sprint(len(f.big.Layers)))
		if err != nil {
			return nil, err
		}
		w, err := e.pull(ctx, d, e.host+"/bench/big", "1")
		if err == nil {
			walls8 = append(walls8, w)
			hwm, herr := d.peakRSS()
			peak, err = max(peak, hwm), herr
		}
		dropDaemon(d, root)
		if err != nil {
			return nil, err
		}
	}
	med, p95 := stats(walls)
	bmed, _ := stats(bases)
	fmed, fp95 := stats(floors)
	m8, m8p95 := stats(walls8)
	smed, sp95 := stats(secondLat)
	mib := float64(total) / (1 << 20)
	return []row{
		{
			Case: "3", Name: fmt.Sprintf("pull %.0f MiB, %d layers, RTT 0", mib, len(f.big.Layers)), Unit: "ms", N: len(walls),
			Reqs: fmt.Sprintf("%d/%d", first.reg, first.tok), Conns: fmt.Sprintf("%d/%d", first.regConns, first.tokConns),
			Median: ms(med), P95: ms(p95), Baseline: ms(bmed), BaseName: "parallel GET to /dev/null", Ratio: pairedRatio(walls, bases),
			Target: "≤1.20× download", Pass: pass(pairedRatio(walls, bases) <= 1.2),
			Note: fmt.Sprintf("wharf %.0f MiB/s, plain client %.0f MiB/s; CPU per pull (user+sys, median): wharfd %s, crane %s, skopeo %s",
				mib/med.Seconds(), mib/bmed.Seconds(), cpuMs(cpuW), cpuMs(cpuC), cpuMs(cpuS)),
		},
		{
			Case: "3", Name: "  same pull vs download+sha256+write+fsync", Unit: "ms", N: len(walls),
			Median: ms(med), P95: ms(p95), Baseline: ms(fmed), BaseName: "plain client, same work", Ratio: pairedRatio(walls, floors),
			Note: fmt.Sprintf("floor p95 %.0f ms: the whole job with a plain Go client, %d layers in parallel", ms(fp95), len(f.big.Layers)),
		},
		anchorRow(cranes, wallsC, "crane pull --format=oci", "  same pull vs crane pull to an OCI layout", "≤1.10× crane", 1.10, "crane: verified, written, not fsynced", anchorNotes),
		anchorRow(skopeos, wallsS, "skopeo copy docker:// oci:", "  same pull vs skopeo copy to an OCI layout", "≤1.00× skopeo", 1.00, "skopeo: verified, written, each blob fsynced", anchorNotes),
		{
			Case: "3", Name: "  same pull vs docker pull", Unit: "ms", N: 0,
			Note: "not measured: no docker engine on this machine",
		},
		{
			Case: "3", Name: fmt.Sprintf("  pull with --max-concurrent-downloads %d", len(f.big.Layers)), Unit: "ms", N: len(walls8),
			Median: ms(m8), P95: ms(m8p95), Baseline: ms(bmed), BaseName: "parallel GET to /dev/null", Ratio: ms(m8) / ms(bmed),
		},
		crane8Row(walls8, cranes),
		{
			Case: "3", Name: "  wharfd peak RSS (VmHWM) during pull", Unit: "MiB", N: iters,
			Median: float64(peak) / (1 << 20), Target: "≤64 MiB", Pass: pass(peak <= 64<<20),
		},
		{
			Case: "3", Name: "  second pull of the same image", Unit: "ms", N: len(secondLat),
			Reqs: fmt.Sprintf("%d/%d", second.reg, second.tok), Conns: fmt.Sprintf("%d/%d", second.regConns, second.tokConns),
			Median: ms(smed), P95: ms(sp95), Target: "≤3 requests", Pass: pass(second.total() <= 3),
		},
	}, nil
}

// anchorRow is wharf's pull (walls) against an anchor tool's (anchor),
// paired iteration by iteration.
func anchorRow(anchor, walls []time.Duration, baseName, name, target string, limit float64, note string, notes []string) row {
	r := row{Case: "3", Name: name, Unit: "ms", N: len(anchor), BaseName: baseName, Target: target, Note: note}
	if len(anchor) == 0 {
		r.Note = strings.Join(notes, "; ")
		return r
	}
	med, p95 := stats(walls)
	amed, ap95 := stats(anchor)
	r.Median, r.P95, r.Baseline = ms(med), ms(p95), ms(amed)
	r.Ratio = pairedRatio(walls, anchor)
	r.Pass = pass(r.Ratio <= limit)
	r.Note += fmt.Sprintf("; anchor p95 %.0f ms", ms(ap95))
	return r
}

// cpuMs is the median of cpu in ms, or "-".
func cpuMs(cpu []time.Duration) string {
	if len(cpu) == 0 {
		return "-"
	}
	m, _ := stats(cpu)
	return fmt.Sprintf("%.0f ms", ms(m))
}

// crane8Row compares the pull with as many parallel downloads as crane uses
// (crane writes every layer at once) with crane. The two series are taken in
// separate loops, so the ratio is of medians, not paired.
func crane8Row(walls8, cranes []time.Duration) row {
	r := row{Case: "3", Name: "  pull with --max-concurrent-downloads 8 vs crane", Unit: "ms", N: len(walls8),
		BaseName: "crane pull --format=oci", Note: "ratio of medians (not paired): crane downloads all 8 layers at once, wharfd 3 by default (dockerd's)"}
	if len(walls8) == 0 || len(cranes) == 0 {
		return r
	}
	m8, p95 := stats(walls8)
	cm, _ := stats(cranes)
	r.Median, r.P95, r.Baseline, r.Ratio = ms(m8), ms(p95), ms(cm), ms(m8)/ms(cm)
	return r
}

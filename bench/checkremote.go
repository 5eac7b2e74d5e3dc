//go:build bench

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// Case 6: the update check of 100 local images — 100 tags of
// one repository, pulled with --all-tags at RTT 0 — against the token
// registry at the env's RTT, beside the same HEADs sent by a plain Go
// client with the same concurrency (8, graph's checkConcurrency) and a
// token it already holds. Rows: warm (the daemon has the token), cold (a
// new daemon process on the same data-root: challenge, token, then the
// HEADs) and a repeat within --max-age (no request).

const (
	checkRepo        = "bench/check"
	checkTags        = 100
	checkConcurrency = 8 // graph/updates/check.go
)

// pushCheckFixtures tags one small image 100 times in bench/check.
func pushCheckFixtures(ctx context.Context, e *env) error {
	img, err := testregistry.NewImage(testregistry.ImageOptions{Labels: map[string]string{"bench": "check"}})
	if err != nil {
		return err
	}
	c := e.client()
	if err := c.PushImage(ctx, checkRepo, "t000", img); err != nil {
		return err
	}
	for i := 1; i < checkTags; i++ {
		if err := c.PutManifest(ctx, checkRepo, fmt.Sprintf("t%03d", i), img.Manifest); err != nil {
			return err
		}
	}
	return nil
}

// checkRemote is POST /wharf/images/check-remote?name=REPO[&max-age=…],
// read to its end; every line must be current.
func (e *env) checkRemote(ctx context.Context, d *wharfd, maxAge string) (time.Duration, error) {
	path := "/v1.50/wharf/images/check-remote?name=" + e.host + "/" + checkRepo
	if maxAge != "" {
		path += "&max-age=" + maxAge
	}
	n := 0
	// X-Registry-Auth names its registry: e.host.
	el, err := d.stream(ctx, "check-remote", path, http.Header{"X-Registry-Auth": {e.auth}}, func(line []byte) error {
		var r struct{ RemoteStatus, RemoteError string }
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.RemoteStatus != "current" {
			return fmt.Errorf("check-remote: %s %s", r.RemoteStatus, r.RemoteError)
		}
		n++
		return nil
	})
	if err != nil {
		return 0, err
	}
	if n != checkTags {
		return 0, fmt.Errorf("check-remote: %d results, want %d", n, checkTags)
	}
	return el, nil
}

// plainHEADs sends the manifest HEADs of w with checkConcurrency workers and
// the repository's token (fetching it first, after one unauthenticated
// HEAD for the challenge, when cold): the floor for the same requests.
func (e *env) plainHEADs(ctx context.Context, hc *http.Client, w wire, cold bool) (time.Duration, error) {
	// Only the check's own HEADs: a client of an earlier case may still be
	// finishing a request to another repository as this one starts.
	var paths []string
	prefix := "HEAD /v2/" + checkRepo + "/manifests/"
	for i, r := range w.reg {
		if strings.HasPrefix(r, prefix) && w.regAut[i] {
			paths = append(paths, strings.TrimPrefix(r, "HEAD "))
		}
	}
	if len(paths) == 0 {
		return 0, fmt.Errorf("plain HEADs: the check sent no HEAD of %s", checkRepo)
	}
	head := func(p, tok string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+e.host+p, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", manifestAccept)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if tok != "" && resp.StatusCode != http.StatusOK {
			return fmt.Errorf("plain HEAD %s: %d", p, resp.StatusCode)
		}
		return nil
	}
	// Warm, the token is fetched before the clock starts (wharfd holds
	// one); a token kept from an earlier case may have expired since.
	var tok string
	if !cold {
		t, err := e.token(ctx, hc, checkRepo)
		if err != nil {
			return 0, err
		}
		tok = t
	}
	start := time.Now()
	if cold {
		if err := head(paths[0], ""); err != nil { // the challenge
			return 0, err
		}
		t, err := e.token(ctx, hc, checkRepo)
		if err != nil {
			return 0, err
		}
		tok = t
	}
	jobs := make(chan string)
	errs := make(chan error, checkConcurrency)
	var wg sync.WaitGroup
	for range checkConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				if err := head(p, tok); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, p := range paths {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	el := time.Since(start)
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return el, nil
}

// caseCheckRemote is case 6.
func caseCheckRemote(ctx context.Context, e *env, iters int) ([]row, error) {
	rtt := e.regProxy.RTT()
	root, err := os.MkdirTemp("", "wharf-bench-root-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	// Pull the 100 tags at RTT 0: only the check is timed.
	e.setRTT(0)
	d, err := startWharfd(e.wharfd, root)
	if err != nil {
		return nil, err
	}
	if _, err := e.pull(ctx, d, e.host+"/"+checkRepo, ""); err != nil {
		d.stop()
		return nil, err
	}
	e.setRTT(rtt)

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer hc.CloseIdleConnections()
	var warm, cold, fresh sample
	run := func(s *sample, maxAge string, isCold bool) error {
		e.reset()
		el, err := e.checkRemote(ctx, d, maxAge)
		if err != nil {
			return err
		}
		s.add(el, e.counts())
		if maxAge != "" {
			return nil
		}
		w := e.capture()
		b, err := e.plainHEADs(ctx, hc, w, isCold)
		if err != nil {
			return err
		}
		s.base = append(s.base, b)
		return nil
	}
	// Warm the connections of both sides once, unmeasured.
	if _, err := e.checkRemote(ctx, d, ""); err != nil {
		d.stop()
		return nil, err
	}
	if _, err := e.plainHEADs(ctx, hc, e.capture(), true); err != nil {
		d.stop()
		return nil, err
	}
	for i := 0; i < iters; i++ {
		if err := run(&warm, "", false); err != nil {
			d.stop()
			return nil, err
		}
		if err := run(&fresh, "1h", false); err != nil {
			d.stop()
			return nil, err
		}
	}
	for i := 0; i < max(2, iters/2); i++ {
		d.stop()
		if d, err = startWharfd(e.wharfd, root); err != nil {
			return nil, err
		}
		if err := run(&cold, "", true); err != nil {
			d.stop()
			return nil, err
		}
	}
	d.stop()

	mk := func(name string, s sample, maxReg, maxTok int, ratioLimit float64) row {
		med, p95 := stats(s.lat)
		bmed, _ := stats(s.base)
		r := row{
			Case: "6", Name: name, Unit: "ms", N: len(s.lat),
			Reqs:   fmt.Sprintf("%d/%d", s.worst.reg, s.worst.tok),
			Conns:  fmt.Sprintf("%d/%d", s.worst.regConns, s.worst.tokConns),
			Median: ms(med), P95: ms(p95),
			Baseline: ms(bmed), BaseName: fmt.Sprintf("same HEADs, plain client, %d at a time", checkConcurrency),
			Ratio: pairedRatio(s.lat, s.base),
		}
		ok := s.worst.reg <= maxReg && s.worst.tok <= maxTok
		r.Target = fmt.Sprintf("≤%d/%d req", maxReg, maxTok)
		if ratioLimit > 0 && rtt > 0 {
			r.Target += fmt.Sprintf("; ≤%.2f× plain", ratioLimit)
			ok = ok && r.Ratio <= ratioLimit
		}
		r.Pass = pass(ok)
		return r
	}
	rows := []row{
		mk(fmt.Sprintf("update check, %d tags, warm, RTT %.0fms", checkTags, ms(rtt)), warm, checkTags, 0, 1.25),
		mk(fmt.Sprintf("update check, %d tags, new process, RTT %.0fms", checkTags, ms(rtt)), cold, checkTags+1, 1, 1.25),
	}
	rows[0].Note = fmt.Sprintf("one HEAD at a time would take ≥ %d × RTT = %.0f ms", checkTags, float64(checkTags)*ms(rtt))
	fr := row{
		Case: "6", Name: fmt.Sprintf("update check, %d tags, repeat within --max-age", checkTags), Unit: "ms", N: len(fresh.lat),
		Reqs: fmt.Sprintf("%d/%d", fresh.worst.reg, fresh.worst.tok),
	}
	fr.Median, fr.P95 = func() (float64, float64) { m, p := stats(fresh.lat); return ms(m), ms(p) }()
	fr.Target, fr.Pass = "0 requests", pass(fresh.worst.total() == 0)
	return append(rows, fr), nil
}

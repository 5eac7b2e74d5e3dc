//go:build bench

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

func runScale(ctx context.Context, bin string, n int, logf func(string, ...any)) (*scaleResult, error) {
	res := &scaleResult{n: n, lists: map[string][]time.Duration{}}
	sizeStart := time.Now()
	var d *wharfd
	mark := func(what string, t time.Time) {
		s := fmt.Sprintf("%s %.1fs", what, time.Since(t).Seconds())
		res.stepSecs = append(res.stepSecs, s)
		if d != nil && what != "size total" {
			if hwm, err := procStatus(d.cmd.Process.Pid, "VmHWM"); err == nil {
				res.stepPeaks = append(res.stepPeaks, fmt.Sprintf("%s %.0f", what, float64(hwm)/(1<<20)))
				s += fmt.Sprintf(", VmHWM %.0f MiB", float64(hwm)/(1<<20))
			}
			// "5" resets VmHWM to the current RSS (proc(5)): the next
			// step's peak is its own.
			_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", d.cmd.Process.Pid), []byte("5"), 0)
		}
		logf("case 11: %s images: %s", thousands(n), s)
	}
	root, err := os.MkdirTemp("", "wharf-bench-scale-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	t := time.Now()
	recs, owned, err := prepareRootWith(root, n, scaleOwn)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	res.prep = time.Since(t)
	mark("prepare", t)
	recordsPath := filepath.Join(root, "wharf", "images.json")
	if fi, err := os.Stat(recordsPath); err == nil {
		res.recordsBytes = fi.Size()
	}

	// Start-up: one uncounted start (it writes index.json), then 3, each
	// with /metrics (the concurrent tags read the commits counter).
	t = time.Now()
	maddr, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	murl := "http://" + maddr + "/metrics"
	d, el, err := timedStart(bin, root, "--metrics-addr", maddr)
	if err != nil {
		return nil, fmt.Errorf("first start: %w", err)
	}
	hwmFirst, _ := d.peakRSS()
	res.firstStart = el
	d.stop()
	for i := 0; i < scaleStarts; i++ {
		if d, el, err = timedStart(bin, root, "--metrics-addr", maddr); err != nil {
			return nil, fmt.Errorf("start %d: %w", i+1, err)
		}
		res.starts = append(res.starts, el)
		if i < scaleStarts-1 {
			d.stop()
		}
	}
	defer d.stop()
	res.stepPeaks = append(res.stepPeaks, fmt.Sprintf("first start (migration) %.0f", float64(hwmFirst)/(1<<20)))
	stopSampling := sampleRSS(d.cmd.Process.Pid, &res.maxAnon, &res.maxFile)
	defer stopSampling()
	mark("start-ups", t)

	// The scrub after the start (orphan collection and the quick check,
	// which run after the daemon answers): a
	// quick check waits for it and reports it. Off the measured rows; its
	// time is in the start-up row's note, its memory in the step's VmHWM.
	t = time.Now()
	if _, b, err := call(ctx, d, http.MethodGet, "/wharf/system/check?full=0", nil, nil, http.StatusOK); err != nil {
		return nil, err
	} else {
		var rep struct {
			LastScrub *struct{ Started, Finished time.Time }
		}
		if json.Unmarshal(b, &rep) == nil && rep.LastScrub != nil {
			res.scrub = rep.LastScrub.Finished.Sub(rep.LastScrub.Started)
		}
	}
	mark("scrub and a quick check", t)

	// Inspect by name and by short ID, alternated.
	t = time.Now()
	for i := 0; i < scaleInspects; i++ {
		r := recs[(i*7919)%n]
		el, _, err := call(ctx, d, http.MethodGet, "/v1.50/images/"+r.RepoTags[0]+"/json", nil, nil, http.StatusOK)
		if err != nil {
			return nil, err
		}
		res.byName = append(res.byName, el)
		r = recs[(i*104729+1)%n]
		el, _, err = call(ctx, d, http.MethodGet, "/v1.50/images/"+r.ID.Encoded()[:12]+"/json", nil, nil, http.StatusOK)
		if err != nil {
			return nil, err
		}
		res.byID = append(res.byID, el)
	}
	mark("inspects", t)

	// Lists: one cold, then the four variants alternated.
	t = time.Now()
	if res.listCold, _, err = call(ctx, d, http.MethodGet, "/v1.50/images/json", nil, nil, http.StatusOK); err != nil {
		return nil, err
	}
	for i := 0; i < scaleLists; i++ {
		for _, v := range scaleListVariants {
			path := "/v1.50/images/json"
			if v.query != "" {
				path += "?filters=" + url.QueryEscape(v.query)
			}
			el, b, err := call(ctx, d, http.MethodGet, path, nil, nil, http.StatusOK)
			if err != nil {
				return nil, err
			}
			var list []json.RawMessage
			if err := json.Unmarshal(b, &list); err != nil {
				return nil, fmt.Errorf("GET %s: %w", path, err)
			}
			want := v.want
			if want < 0 {
				want = n
			}
			if len(list) != want {
				return nil, fmt.Errorf("GET %s: %d images, want %d", path, len(list), want)
			}
			res.lists[v.key] = append(res.lists[v.key], el)
		}
	}
	mark("lists", t)

	// Tag 10 distinct images, then untag those second tags (noprune).
	t = time.Now()
	name := func(i int) string { return fmt.Sprintf("127.0.0.1:5000/many/img-%d", i) }
	for i := 0; i < scaleIters; i++ {
		j := scaleOwn + i
		el, _, err := call(ctx, d, http.MethodPost, "/v1.50/images/"+name(j)+":v1/tag?repo="+url.QueryEscape(name(j))+"&tag=second", nil, nil, http.StatusCreated)
		if err != nil {
			return nil, err
		}
		res.tag = append(res.tag, el)
	}
	for i := 0; i < scaleIters; i++ {
		j := scaleOwn + i
		el, _, err := call(ctx, d, http.MethodDelete, "/v1.50/images/"+name(j)+":second?noprune=1", nil, nil, http.StatusOK)
		if err != nil {
			return nil, err
		}
		res.untag = append(res.untag, el)
	}
	mark("tags and untags", t)

	// The record step: imports of one tiny tar (the first, uncounted,
	// stores its layer).
	t = time.Now()
	tarb := tinyTar("scale")
	tarHdr := map[string]string{"Content-Type": "application/x-tar"}
	for i := 0; i <= scaleIters; i++ {
		path := fmt.Sprintf("/v1.50/images/create?fromSrc=-&repo=%s&tag=r%d&message=%s",
			url.QueryEscape("127.0.0.1:5000/scale/import"), i, url.QueryEscape(fmt.Sprintf("scale %d %d", n, i)))
		el, b, err := call(ctx, d, http.MethodPost, path, tarHdr, tarb, http.StatusOK)
		if err != nil {
			return nil, err
		}
		if bytes.Contains(b, []byte(`"errorDetail"`)) {
			return nil, fmt.Errorf("import: %.300s", b)
		}
		if i > 0 {
			res.record = append(res.record, el)
		}
	}
	_, b, err := call(ctx, d, http.MethodGet, "/v1.50/images/json?filters="+url.QueryEscape(`{"reference":["127.0.0.1:5000/scale/import"]}`), nil, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var imported []struct{ ID string }
	if err := json.Unmarshal(b, &imported); err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, im := range imported {
		ids[im.ID] = true
	}
	if res.importIDs = len(ids); res.importIDs != scaleIters+1 {
		return nil, fmt.Errorf("imports made %d distinct images, want %d (each must be a new record)", res.importIDs, scaleIters+1)
	}
	mark("imports", t)

	// rmi with GC of the images that own their layer.
	t = time.Now()
	for i := 0; i < scaleOwn && i < scaleIters; i++ {
		el, b, err := call(ctx, d, http.MethodDelete, "/v1.50/images/"+name(i)+":v1", nil, nil, http.StatusOK)
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(b, []byte(`"Deleted"`)) {
			return nil, fmt.Errorf("rmi %s: nothing deleted: %.300s", name(i), b)
		}
		res.rmi = append(res.rmi, el)
		if _, err := os.Stat(filepath.Join(root, "blobs", "sha256", owned[i].Encoded())); err == nil {
			res.gcLeft++
		}
	}
	mark("rmis", t)

	// 64 concurrent tags of distinct images beside one tag.
	t = time.Now()
	for r := 0; r < scaleConcRounds; r++ {
		var singles []time.Duration
		for k := 0; k < 3; k++ {
			j := scaleOwn + 100 + k
			if j >= n {
				j = scaleOwn + scaleConc + k
			}
			el, _, err := call(ctx, d, http.MethodPost, "/v1.50/images/"+name(j)+":v1/tag?repo="+url.QueryEscape(name(j))+fmt.Sprintf("&tag=s%d", r), nil, nil, http.StatusCreated)
			if err != nil {
				return nil, err
			}
			singles = append(singles, el)
		}
		one, _ := stats(singles)
		res.single = append(res.single, singles...)
		k1, err := metricValue(ctx, murl, "wharf_store_commits_total")
		if err != nil {
			return nil, err
		}
		w1, c1, err := burstCPU(d)
		if err != nil {
			return nil, err
		}
		var wg sync.WaitGroup
		errs := make([]error, scaleConc)
		start := time.Now()
		for k := 0; k < scaleConc; k++ {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				j := scaleOwn + k
				_, _, errs[k] = call(ctx, d, http.MethodPost, "/v1.50/images/"+name(j)+":v1/tag?repo="+url.QueryEscape(name(j))+fmt.Sprintf("&tag=c%d", r), nil, nil, http.StatusCreated)
			}(k)
		}
		wg.Wait()
		wall := time.Since(start)
		w2, c2, err := burstCPU(d)
		if err != nil {
			return nil, err
		}
		res.concFloor = append(res.concFloor, (w2-w1+c2-c1)/time.Duration(runtime.NumCPU()))
		res.concServer = append(res.concServer, (w2-w1)/scaleConc)
		k2, err := metricValue(ctx, murl, "wharf_store_commits_total")
		if err != nil {
			return nil, err
		}
		res.concCommits = append(res.concCommits, int(k2-k1))
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		res.conc = append(res.conc, wall)
		res.concRatio = append(res.concRatio, float64(wall)/float64(one))
	}
	mark("concurrent tags", t)

	stopSampling()
	// VmHWM was reset at each step: the run's peak is the largest step's.
	for _, p := range res.stepPeaks[1:] {
		var mib float64
		fmt.Sscan(p[strings.LastIndexByte(p, ' ')+1:], &mib)
		if b := int64(mib * (1 << 20)); b > res.rss {
			res.rss = b
		}
	}
	if hwm, err := d.peakRSS(); err != nil {
		return nil, err
	} else if hwm > res.rss {
		res.rss = hwm
	}
	if fi, err := os.Stat(recordsPath); err == nil {
		res.recordsBytesAfter = fi.Size()
	}
	mark("size total", sizeStart)
	return res, nil
}

// sampleRSS records the largest RssAnon and RssFile of pid, sampled every
// 10 ms, until the returned function is called (idempotent).
func sampleRSS(pid int, anon, file *int64) func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for {
			if a, err := procStatus(pid, "RssAnon"); err == nil && a > *anon {
				*anon = a
			}
			if f, err := procStatus(pid, "RssFile"); err == nil && f > *file {
				*file = f
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stop); <-done }) }
}

// burstCPU is the CPU used so far by wharfd (its threads' schedstat) and
// by this process (getrusage: the client's side of the requests).
func burstCPU(d *wharfd) (wharfd, client time.Duration, err error) {
	if wharfd, err = cpuTimeFine(d); err != nil {
		return 0, 0, err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, err
	}
	return wharfd, time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

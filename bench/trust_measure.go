//go:build bench

package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// trustWarm: after one cold inspect on each daemon, warm inspects of the
// same tag, alternating the verifying and the unverified daemon (which
// goes first alternates too), each with fresh counters.
func trustWarm(ctx context.Context, e *env, policy string, s signedImage, iters int) ([]row, error) {
	p, err := startTrustDaemon(e, policy)
	if err != nil {
		return nil, err
	}
	defer p.drop()
	u, err := startTrustDaemon(e, "")
	if err != nil {
		return nil, err
	}
	defer u.drop()
	for _, d := range []*trustDaemon{p, u} {
		if _, _, err := e.inspectTrust(ctx, d.wharfd, s.name(e), s.img.ID()); err != nil {
			return nil, err
		}
	}
	var latP, latU []time.Duration
	var worstP, worstU counts
	one := func(d *trustDaemon, verified bool) error {
		e.reset()
		el, dec, err := e.inspectTrust(ctx, d.wharfd, s.name(e), s.img.ID())
		if err != nil {
			return err
		}
		if verified != (dec != "") {
			return fmt.Errorf("warm inspect: decision %q (policy %v)", dec, verified)
		}
		c := e.counts()
		if verified {
			latP = append(latP, el)
			if c.total() > worstP.total() {
				worstP = c
			}
		} else {
			latU = append(latU, el)
			if c.total() > worstU.total() {
				worstU = c
			}
		}
		return nil
	}
	for i := 0; i < iters; i++ {
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		for _, verified := range order {
			d := u
			if verified {
				d = p
			}
			if err := one(d, verified); err != nil {
				return nil, err
			}
		}
	}
	medP, p95P := stats(latP)
	medU, p95U := stats(latU)
	ratio := pairedRatio(latP, latU)
	return []row{
		{Case: "10", Name: "warm inspect, unverified (no policy)", Unit: "ms", N: len(latU),
			Reqs: fmt.Sprintf("%d/%d", worstU.reg, worstU.tok), Conns: fmt.Sprintf("%d/%d", worstU.regConns, worstU.tokConns),
			Median: ms(medU), P95: ms(p95U), Target: "1 req", Pass: pass(worstU.total() == 1)},
		{Case: "10", Name: "warm inspect, verified (sigstoreSigned)", Unit: "ms", N: len(latP),
			Reqs: fmt.Sprintf("%d/%d", worstP.reg, worstP.tok), Conns: fmt.Sprintf("%d/%d", worstP.regConns, worstP.tokConns),
			Median: ms(medP), P95: ms(p95P), Baseline: ms(medU), BaseName: "unverified, alternated", Ratio: ratio,
			Target: "1 req; ≤1.10× unverified", Pass: pass(worstP.total() == 1 && ratio <= 1.10),
			Note: fmt.Sprintf("ratio is the median of per-iteration ratios; unverified p95 %.2f ms", ms(p95U))},
	}, nil
}

// trustCold: a fresh verifying daemon and a fresh unverified one per
// iteration (which goes first alternates); the verifying daemon's
// requests are split into the inspect's and the signature look-ups', and
// must be the unverified daemon's plus the look-ups.
func trustCold(ctx context.Context, e *env, policy string, s signedImage, iters int) ([]row, error) {
	var latP, latU []time.Duration
	var lookupLog []string
	var last struct {
		p, u                 counts
		lookups, inspectReqs int
	}
	ok := true
	var bad []string
	for i := 0; i < iters; i++ {
		var cp, cu counts
		var logP []string
		for _, verified := range []bool{i%2 == 0, i%2 == 1} {
			pol := ""
			if verified {
				pol = policy
			}
			d, err := startTrustDaemon(e, pol)
			if err != nil {
				return nil, err
			}
			e.reset()
			el, _, err := e.inspectTrust(ctx, d.wharfd, s.name(e), s.img.ID())
			c := e.counts()
			reqs := e.reg.Counter.Requests()
			d.drop()
			if err != nil {
				return nil, err
			}
			if verified {
				latP, cp, logP = append(latP, el), c, reqs
			} else {
				latU, cu = append(latU, el), c
			}
		}
		lookups := 0
		lookupLog = lookupLog[:0]
		for _, r := range logP {
			if signatureLookup(r, s.img) {
				lookups++
				lookupLog = append(lookupLog, shortRequest(r))
			}
		}
		inspectReqs := cp.reg - lookups
		if cp.total() != cu.total()+lookups || inspectReqs != cu.reg {
			ok = false
			bad = append(bad, fmt.Sprintf("iteration %d: %d/%d = %d/%d unverified + %d look-ups? log %q", i, cp.reg, cp.tok, cu.reg, cu.tok, lookups, logP))
		}
		last.p, last.u, last.lookups, last.inspectReqs = cp, cu, lookups, inspectReqs
	}
	medP, p95P := stats(latP)
	medU, _ := stats(latU)
	note := fmt.Sprintf("%d = %d + %d signature look-ups (registry/token: %d/%d = %d/%d + %d/0)",
		last.p.total(), last.u.total(), last.lookups, last.p.reg, last.p.tok, last.u.reg, last.u.tok, last.lookups)
	note += "; look-ups: " + strings.Join(lookupLog, ", ")
	if !ok {
		note += "; MISMATCH: " + strings.Join(bad, "; ")
	}
	return []row{{Case: "10", Name: "cold inspect, verified (fresh wharfd)", Unit: "ms", N: len(latP),
		Reqs: fmt.Sprintf("%d/%d", last.p.reg, last.p.tok), Conns: fmt.Sprintf("%d/%d", last.p.regConns, last.p.tokConns),
		Median: ms(medP), P95: ms(p95P), Baseline: ms(medU), BaseName: "unverified cold, alternated", Ratio: pairedRatio(latP, latU),
		Target: fmt.Sprintf("= unverified (%d) + look-ups (%d)", last.u.total(), last.lookups), Pass: pass(ok), Note: note}}, nil
}

// trustConcurrent: 64 concurrent inspects of one digest against a fresh
// verifying daemon; wharf_trust_verifications_total must go up by 1.
func trustConcurrent(ctx context.Context, e *env, policy string, s signedImage) ([]row, error) {
	d, err := startTrustDaemon(e, policy)
	if err != nil {
		return nil, err
	}
	defer d.drop()
	before, err := d.scrapeCounter(ctx, "wharf_trust_verifications_total")
	if err != nil {
		return nil, err
	}
	e.reset()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for k := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, dec, err := e.inspectTrust(ctx, d.wharfd, s.name(e), s.img.ID())
			if err == nil && dec != "accepted" {
				err = fmt.Errorf("decision %q", dec)
			}
			errs[k] = err
		}()
	}
	wg.Wait()
	el := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	c := e.counts()
	after, err := d.scrapeCounter(ctx, "wharf_trust_verifications_total")
	if err != nil {
		return nil, err
	}
	accepted, err := d.scrapeCounter(ctx, `wharf_trust_verdicts_total{decision="accepted"}`)
	if err != nil {
		return nil, err
	}
	n := after - before
	return []row{{Case: "10", Name: "64 concurrent cold inspects of one digest, verified", Unit: "verifications", N: 64,
		Reqs: fmt.Sprintf("%d/%d", c.reg, c.tok), Conns: fmt.Sprintf("%d/%d", c.regConns, c.tokConns),
		Median: n, Baseline: 1, BaseName: "one flight", Ratio: n,
		Target: "1 verification", Pass: pass(n == 1 && accepted == 1),
		Note: fmt.Sprintf("wharf_trust_verifications_total %.0f → %.0f, verdicts{accepted} %.0f; all 64 answered in %.0f ms", before, after, accepted, ms(el))}}, nil
}

// trustCPU: wharfd's CPU time across cold inspects of n distinct signed
// images (each one verification: the verdict cache never helps), on a
// fresh verifying daemon and a fresh unverified one per round; the
// difference per image is the CPU of a verification (signature look-up
// requests included).
func trustCPU(ctx context.Context, e *env, policy string, imgs []signedImage, rounds int) ([]row, error) {
	var cpuP, cpuU, tickP, tickU time.Duration
	verifications := 0.0
	for r := 0; r < rounds; r++ {
		for _, verified := range []bool{r%2 == 0, r%2 == 1} {
			pol := ""
			if verified {
				pol = policy
			}
			d, err := startTrustDaemon(e, pol)
			if err != nil {
				return nil, err
			}
			err = func() error {
				c0, err := cpuTimeFine(d.wharfd)
				if err != nil {
					return err
				}
				t0, err := d.cpuTime()
				if err != nil {
					return err
				}
				for _, s := range imgs {
					_, dec, err := e.inspectTrust(ctx, d.wharfd, s.name(e), s.img.ID())
					if err != nil {
						return err
					}
					if verified != (dec != "") {
						return fmt.Errorf("decision %q (policy %v)", dec, verified)
					}
				}
				c1, err := cpuTimeFine(d.wharfd)
				if err != nil {
					return err
				}
				t1, err := d.cpuTime()
				if err != nil {
					return err
				}
				if verified {
					cpuP += c1 - c0
					tickP += t1 - t0
					v, err := d.scrapeCounter(ctx, "wharf_trust_verifications_total")
					if err != nil {
						return err
					}
					verifications += v
				} else {
					cpuU += c1 - c0
					tickU += t1 - t0
				}
				return nil
			}()
			d.drop()
			if err != nil {
				return nil, err
			}
		}
	}
	n := len(imgs) * rounds
	per := (ms(cpuP) - ms(cpuU)) / float64(n)
	return []row{{Case: "10", Name: "CPU per verification (verified − unverified cold inspect)", Unit: "ms CPU", N: n,
		Median: per, Baseline: ms(cpuU) / float64(n), BaseName: "unverified cold inspect, CPU",
		Target: "reported", Pass: nil,
		Note: fmt.Sprintf("wharfd CPU (threads' schedstat) over %d cold inspects of distinct signed images: verified %.1f ms (%.0f verifications counted), unverified %.1f ms; by /proc/PID/stat's 10 ms ticks (cpuTime): %.0f ms and %.0f ms, %.2f ms per verification",
			n, ms(cpuP), verifications, ms(cpuU), ms(tickP), ms(tickU), (ms(tickP)-ms(tickU))/float64(n))}}, nil
}

//go:build bench

package main

import (
	"fmt"
	"slices"
	"time"
)

// Case 15's table: per RTT, each figure beside its baseline of the same
// turns, as ratios of the pairs.

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func whatRows(runs []whatRun, rtt time.Duration, fx *diffFixture) []row {
	// The requests are the worst turn's: "registry/token, blob GETs".
	pick := func(f func(whatRun) meas) ([]time.Duration, []int64, string) {
		var ds []time.Duration
		var bs []int64
		var worst meas
		for _, r := range runs {
			m := f(r)
			ds, bs = append(ds, m.d), append(bs, m.b)
			if m.reg+m.tok > worst.reg+worst.tok {
				worst = m
			}
		}
		return ds, bs, fmt.Sprintf("%d/%d, %d blob GETs", worst.reg, worst.tok, worst.gets)
	}
	med := func(ds []time.Duration) float64 { m, _ := stats(ds); return ms(m) }
	medB := func(bs []int64) float64 {
		s := slices.Clone(bs)
		slices.Sort(s)
		return mib(s[len(s)/2])
	}
	diffOK, gzOK, tocOK := true, true, true
	for _, r := range runs {
		diffOK, gzOK, tocOK = diffOK && r.diffOK, gzOK && r.gz.ok, tocOK && r.toc.ok
	}
	last := runs[len(runs)-1]
	name := func(s string) string { return fmt.Sprintf("%s, RTT %s", s, rtt) }

	diffCold, diffColdB, diffColdG := pick(func(r whatRun) meas { return r.diffCold })
	diffWarm, diffWarmB, diffWarmG := pick(func(r whatRun) meas { return r.diffWarm })
	base, baseB, baseG := pick(func(r whatRun) meas { return r.baseline })
	cmp, _, _ := pick(func(r whatRun) meas { return meas{d: r.compare} })
	pkgCold, pkgColdB, pkgColdG := pick(func(r whatRun) meas { return r.gz.cold })
	pkgWarm, pkgWarmB, pkgWarmG := pick(func(r whatRun) meas { return r.gz.warm })
	syft, syftB, syftG := pick(func(r whatRun) meas { return r.gz.syft })
	tocCold, tocColdB, tocColdG := pick(func(r whatRun) meas { return r.toc.cold })
	tocSyft, tocSyftB, tocSyftG := pick(func(r whatRun) meas { return r.toc.syft })

	dColdT, dColdB := pairedRatio(diffCold, base), pairedRatio(diffColdB, baseB)
	dWarmT, dWarmB := pairedRatio(diffWarm, base), pairedRatio(diffWarmB, baseB)
	pColdT, pColdB := pairedRatio(pkgCold, syft), pairedRatio(pkgColdB, syftB)
	pWarmT, pWarmB := pairedRatio(pkgWarm, syft), pairedRatio(pkgWarmB, syftB)
	tColdT, tColdB := pairedRatio(tocCold, tocSyft), pairedRatio(tocColdB, tocSyftB)
	const baseName, syftName = "crane pull A B + compare", "syft registry:B"
	sizes := fmt.Sprintf("images %.0f MiB each: %.0f MiB shared, top layers %.1f and %.1f MiB; baseline %s",
		mib(fx.shared+fx.toTop), mib(fx.shared), mib(fx.fromTop), mib(fx.toTop), baseG)
	return []row{
		{Case: "15", Name: name("diff --remote A B, cold (2 versions, top layers differ)"), Unit: "ms", N: len(runs),
			Reqs: diffColdG, Median: med(diffCold), Baseline: med(base), BaseName: baseName, Ratio: dColdT,
			Target: "≤ 0.2×, names the 1 package and 2 files", Pass: pass(dColdT <= 0.2 && diffOK),
			Note: fmt.Sprintf("wharf: %s; baseline (%.0f ms of it the comparison): %s", last.diffFound, med(cmp), last.baselineFound)},
		{Case: "15", Name: name("diff --remote A B, cold: bytes from the registry"), Unit: "MiB", N: len(runs),
			Reqs: diffColdG, Median: medB(diffColdB), Baseline: medB(baseB), BaseName: baseName, Ratio: dColdB,
			Target: "≤ 0.1×", Pass: pass(dColdB <= 0.1), Note: sizes},
		{Case: "15", Name: name("diff --remote A B, warm (second run)"), Unit: "ms", N: len(runs),
			Reqs: diffWarmG, Median: med(diffWarm), Baseline: med(base), BaseName: baseName, Ratio: dWarmT,
			Target: "≤ 0.2×, ≤ 0.1× bytes", Pass: pass(dWarmT <= 0.2 && dWarmB <= 0.1 && diffOK),
			Note: fmt.Sprintf("%.1f KiB from the registry (%.4f× the baseline's)", medB(diffWarmB)*1024, dWarmB)},
		{Case: "15", Name: name("packages --remote B, cold"), Unit: "ms", N: len(runs),
			Reqs: pkgColdG, Median: med(pkgCold), Baseline: med(syft), BaseName: syftName, Ratio: pColdT,
			Target: "≤ 0.2×, syft's packages", Pass: pass(pColdT <= 0.2 && gzOK), Note: last.gz.note},
		{Case: "15", Name: name("packages --remote B, cold: bytes from the registry"), Unit: "MiB", N: len(runs),
			Reqs: pkgColdG, Median: medB(pkgColdB), Baseline: medB(syftB), BaseName: syftName, Ratio: pColdB,
			Target: "≤ 0.1×", Pass: pass(pColdB <= 0.1), Note: "syft " + syftG},
		{Case: "15", Name: name("packages --remote B, warm (second run)"), Unit: "ms", N: len(runs),
			Reqs: pkgWarmG, Median: med(pkgWarm), Baseline: med(syft), BaseName: syftName, Ratio: pWarmT,
			Target: "≤ 0.2×, ≤ 0.1× bytes", Pass: pass(pWarmT <= 0.2 && pWarmB <= 0.1 && gzOK),
			Note: fmt.Sprintf("%.1f KiB from the registry (%.4f× syft's)", medB(pkgWarmB)*1024, pWarmB)},
		{Case: "15", Name: name("packages --remote B in eStargz layers, cold"), Unit: "ms", N: len(runs),
			Reqs: tocColdG, Median: med(tocCold), Baseline: med(tocSyft), BaseName: syftName, Ratio: tColdT,
			Target: "≤ 0.2×, syft's packages", Pass: pass(tColdT <= 0.2 && tocOK), Note: last.toc.note},
		{Case: "15", Name: name("packages --remote B in eStargz layers, cold: bytes"), Unit: "MiB", N: len(runs),
			Reqs: tocColdG, Median: medB(tocColdB), Baseline: medB(tocSyftB), BaseName: syftName, Ratio: tColdB,
			Target: "≤ 0.1×", Pass: pass(tColdB <= 0.1), Note: "syft " + tocSyftG},
	}
}

package daemon

import (
	"context"
	"sort"
	"time"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/daemon/metrics"
	"github.com/wharfproject/wharf/registry"
)

// RegistryStatus implements server.SystemBackend: /info's WharfRegistries,
// one entry per registry host that sent rate-limit headers or is backed
// off now, sorted by host.
func (d *Daemon) RegistryStatus(ctx context.Context) []types.RegistryStatus {
	if d.registry == nil {
		return nil
	}
	by := map[string]*types.RegistryStatus{}
	entry := func(host string) *types.RegistryStatus {
		e, ok := by[host]
		if !ok {
			e = &types.RegistryStatus{Host: host}
			by[host] = e
		}
		return e
	}
	for _, rl := range d.registry.RateLimits() {
		entry(rl.Host).RateLimit = apiRateLimit(rl)
	}
	for _, b := range d.registry.Backoffs() {
		e := entry(b.Host)
		until, resets := b.Until, b.Resets
		e.BackoffUntil, e.LimitResets = &until, &resets
	}
	out := make([]types.RegistryStatus, 0, len(by))
	for _, e := range by {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

func apiRateLimit(rl registry.RateLimit) *types.RateLimit {
	return &types.RateLimit{Limit: rl.Limit, Remaining: rl.Remaining, Window: int64(rl.Window / time.Second), Host: rl.Host, Seen: rl.Seen}
}

// rateLimitSamples feeds wharf_registry_ratelimit_remaining at scrape time.
func (d *Daemon) rateLimitSamples() []metrics.RateLimitSample {
	rls := d.registry.RateLimits()
	out := make([]metrics.RateLimitSample, 0, len(rls))
	for _, rl := range rls {
		out = append(out, metrics.RateLimitSample{Host: rl.Host, Remaining: rl.Remaining})
	}
	return out
}

// SearchRegistries implements server.SystemBackend: /info's
// WharfSearchRegistries.
func (d *Daemon) SearchRegistries(ctx context.Context) []string {
	if d.registry == nil {
		return nil
	}
	return d.registry.SearchRegistries()
}

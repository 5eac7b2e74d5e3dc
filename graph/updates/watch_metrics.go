package updates

import (
	"sort"
)

// Sample is the watch's state, for the daemon's check-remote gauges.
type Sample struct {
	Registries   []RegistrySample
	BaseOutdated int
	// Rounds are the rounds finished since start-up; Interval the
	// interval now (seconds, 0: off).
	Rounds   int64
	Interval float64
}

// RegistrySample is one registry's part of a Sample.
type RegistrySample struct {
	Registry string
	// Outdated and Newer count the local tags of the registry whose tag
	// names another digest now, and that have a newer version.
	Outdated, Newer int
	// LastSuccess is when a round last had an answer from the registry
	// (Unix seconds; 0: never).
	LastSuccess float64
}

// Sample is the watch's state for the metrics.
func (w *Watcher) Sample() Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	by := map[string]*RegistrySample{}
	entry := func(reg string) *RegistrySample {
		e := by[reg]
		if e == nil {
			e = &RegistrySample{Registry: reg}
			by[reg] = e
		}
		return e
	}
	s := Sample{Rounds: w.rounds, Interval: w.interval.Seconds()}
	for _, st := range w.state {
		e := entry(st.registry)
		if st.outdated {
			e.Outdated++
		}
		if st.newer != "" {
			e.Newer++
		}
		if st.baseOutdated {
			s.BaseOutdated++
		}
	}
	for reg, t := range w.lastOK {
		entry(reg).LastSuccess = float64(t.UnixNano()) / 1e9
	}
	for _, e := range by {
		s.Registries = append(s.Registries, *e)
	}
	sort.Slice(s.Registries, func(i, j int) bool { return s.Registries[i].Registry < s.Registries[j].Registry })
	return s
}

// Package updates is the update check: which local tags name something
// else in their registry now (outdated, current, missing), which newer
// versions of a version tag the repository offers, and whether an image's
// base moved; and the watch, which runs that check on a schedule and
// reports each change of a tag's state once, across restarts. It reads the
// local tags from graph/store and asks graph/distribution for the
// registry's answers, never a registry itself; the daemon wires the watch
// (interval, credentials, back-offs, events, gauges).
package updates

import (
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/graph/store"
)

// Checker runs update checks over a store's tags.
type Checker struct {
	images *store.Store
	dist   *distribution.Service
	// differ builds the summaries of diff=1 (nil: none, the field says
	// so in each summary's Error).
	differ Differ
}

// New returns the Checker of images' tags, asking dist.
func New(images *store.Store, dist *distribution.Service) *Checker {
	return &Checker{images: images, dist: dist}
}

// DiffWith sets what builds the summaries of diff=1 (graph.Service, which
// holds the diff): set once, before the first check.
func (s *Checker) DiffWith(d Differ) { s.differ = d }

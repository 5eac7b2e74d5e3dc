// Package distribution is the one room of graph that talks to registries:
// it moves images between the store and registries (pull under a store
// lease, verified and recorded whole; push and copy on one transfer plan;
// login), answers remote inspect with its signature verdict in the same
// trip, reads attestations (from the store, and from the image's registry
// for what the store lacks), lists a repository's tags, and exports the
// one-image plan that graph/mirror moves images on and the repositories it
// plans with.
package distribution

import (
	"fmt"

	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/registry"
)

// Registry is the registry client this room drives. The rooms above hand
// it down from the daemon's wiring (graph.Options) and never call it.
type Registry = registry.Service

// Options configure a Service.
type Options struct {
	// Registry talks to registries; nil disables every operation here.
	Registry *registry.Service
	// Events receives image events; nil drops them.
	Events store.EventLogger
	// Platform is the daemon's platform, the default for pulls and index selection.
	Platform ocispec.Platform
	// MaxConcurrentDownloads bounds layer downloads per pull (default 3).
	MaxConcurrentDownloads int
	// Observer is told of pulls and transferred bytes (metrics.go); nil = none.
	Observer Observer
	// Indexer builds the layer index of what a pull downloads, in the same
	// pass (contents.go); nil = none.
	Indexer LayerIndexer
}

// Service pulls into and pushes from st.
type Service struct {
	st        *store.Store
	reg       *registry.Service
	events    store.EventLogger
	platform  ocispec.Platform
	transfers *blobTransfers
	verdicts  *verdicts // the signature policy and its verdicts (trust.go)
	indexer   LayerIndexer
}

// New returns a Service on st.
func New(st *store.Store, opts Options) *Service {
	return &Service{st: st, reg: opts.Registry, events: opts.Events, platform: opts.Platform, transfers: newBlobTransfers(opts), verdicts: newVerdicts(), indexer: opts.Indexer}
}

// ErrNoRegistry is the one answer of every operation that needs a
// registry when the daemon runs without registry access: Unavailable
// (503), since the request may succeed against a daemon that has it.
var ErrNoRegistry = fmt.Errorf("registry access is disabled: %w", errdefs.ErrUnavailable)

// registryService is the registry client, or ErrNoRegistry.
func (s *Service) registryService() (*registry.Service, error) {
	if s.reg == nil {
		return nil, ErrNoRegistry
	}
	return s.reg, nil
}

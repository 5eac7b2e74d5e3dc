// Package graph is wharf's image service: the facade the daemon calls, over
// four packages with one job each —
//
//   - graph/store: the content (blobs), the leases that pin it, the image
//     records and tags, garbage collection and the store check; the one
//     owner of a blob's lifetime;
//   - graph/archive: images in and out of tar streams (load, save, import);
//   - graph/distribution: images between the store and registries (pull,
//     push, copy, login, the registry side of remote inspect);
//   - graph/mirror: sync and the air gap (whole repositories mirrored, and
//     exported to or imported from an OCI layout tar).
//
// What stays here reads the store and answers in the API's shapes: inspect.go
// (BuildInspect, the one function that builds ImageInspect for local and
// remote images), remote_inspect.go, list.go, history.go, tag.go, delete.go
// (delete and prune as dockerd decides them, each one store transaction).
package graph

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/archive"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/graph/mirror"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/internal/rootlock"
	"github.com/wharfproject/wharf/registry"
)

// Options configure a Store.
type Options struct {
	// Root is the data-root; the OCI layout lives directly under it.
	Root string
	// Registry talks to registries; nil disables pull, push and remote inspect.
	Registry *registry.Service
	// Events receives image events; nil drops them.
	Events EventLogger
	// Platform is the daemon's platform, the default for pulls and index selection.
	Platform ocispec.Platform
	// MaxConcurrentDownloads bounds layer downloads per pull (default 3).
	MaxConcurrentDownloads int
	Logger                 *logrus.Entry
	// Transfers is told of pulls and transferred bytes (metrics); nil = none.
	Transfers TransferObserver
	// Lock is the data-root's lock when the caller holds it already (the
	// daemon); nil: the store takes it.
	Lock *rootlock.Lock
}

// EventLogger records image events for GET /events (see store.EventLogger).
type EventLogger = store.EventLogger

// Judge is the signature policy the daemon installs (SetPolicy):
// trust/policy's Policy.
type Judge = distribution.Judge

// Store is the local image store as the API sees it. It is graph/store's
// Store (content, leases, image records and tags, GC, Lookup, Count, the
// store check, Close: its methods are promoted, not forwarded), with the
// answers in the API's shapes on top (this package's files), and the
// endpoints of graph/archive (load, save, import) and graph/distribution
// (pull, push, copy, login, tags, /distribution, the raw manifest),
// promoted as well. So "store" means one thing: graph/store's, which this
// type is, seen from the API.
type Store struct {
	*st   // graph/store: content, leases, image records, tags, GC
	*dist // graph/distribution: pull, push, copy, login, tags, the registry side of inspect
	*arc  // graph/archive: load, save, import
	*mir  // graph/mirror: sync, the archive export and import

	opts Options
	log  *logrus.Entry

	inspects *inspectCache // remote inspect: config-derived fields by config digest

	walkList bool // tests: the list walks every summary instead of the indexes (list.go)
}

// The embedded fields' types, by the names the code calls them (s.st,
// s.dist, s.arc): which package does the work reads at each call, and the
// packages' exported methods are Store's without a line each. A method name
// two of them define would be promoted from neither; the daemon's
// compile-time check that *Store is its imageStore catches that.
type (
	st   = store.Store
	dist = distribution.Service
	arc  = archive.Archiver
	mir  = mirror.Mirror
)

// New opens (creating when needed) the store at opts.Root, cleans the ingest
// area and loads the image records.
func New(ctx context.Context, opts Options) (*Store, error) {
	if opts.MaxConcurrentDownloads <= 0 {
		opts.MaxConcurrentDownloads = 3
	}
	if opts.Logger == nil {
		opts.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	s := &Store{opts: opts, log: opts.Logger, inspects: newInspectCache(inspectCacheEntries)}
	records, err := store.Open(ctx, store.Options{Root: opts.Root, Logger: opts.Logger, Platform: opts.Platform, Lock: opts.Lock})
	if err != nil {
		return nil, err
	}
	s.st = records
	s.dist = distribution.New(records, distribution.Options{
		Registry:               opts.Registry,
		Events:                 opts.Events,
		Platform:               opts.Platform,
		MaxConcurrentDownloads: opts.MaxConcurrentDownloads,
		Observer:               opts.Transfers,
	})
	// A load is judged by the policy distribution holds (SetPolicy), under
	// its docker-archive transport.
	s.arc = archive.New(records, opts.Platform, opts.Events, s.dist.AdmitLoad)
	s.mir = mirror.New(s.dist, records.Root())
	return s, nil
}

// ImageRecord is one local image (graph/store owns the type).
type ImageRecord = store.ImageRecord

// InspectSource is everything BuildInspect needs; local and remote inspect
// fill it from their own sources and then share one function.
type InspectSource struct {
	ID          digest.Digest
	Config      []byte              // image config JSON (OCI, Docker, or a v1Compatibility record)
	Descriptor  *ocispec.Descriptor // the top-level descriptor (nil when unknown)
	Layers      []ocispec.Descriptor
	RepoTags    []string // familiar form
	RepoDigests []string // familiar form
	LastTagTime time.Time
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// CheckProblem and CheckReport are the wire types of the store check.
type (
	CheckProblem = store.CheckProblem
	CheckReport  = store.CheckReport
)

// PushImage is distribution's push, with the platform of every tag checked
// first when a push of all tags names one (`docker push -a --platform`,
// dregsy's docker relay; API ≥ 1.46): moby's containerd store pushes that
// platform of each tag, and a tag that lacks it fails the push before
// anything is uploaded, naming the tag (issue 23, defect 2).
func (s *Store) PushImage(ctx context.Context, opts types.PushOptions, out types.ProgressWriter) error {
	if opts.Platform != nil && opts.Tag == "" {
		if opts.Repo == nil {
			return fmt.Errorf("no repository to push%.0w", errdefs.ErrInvalidArgument)
		}
		repo := reference.TrimNamed(opts.Repo).String()
		imgs, err := s.st.ImagesByRepository(repo)
		if err != nil {
			return err
		}
		tags := make([]string, 0, len(imgs))
		for t := range imgs {
			tags = append(tags, t)
		}
		sort.Strings(tags)
		for _, t := range tags {
			if err := s.CheckPlatform(ctx, repo+":"+t, *opts.Platform); err != nil {
				return err
			}
		}
	}
	return s.dist.PushImage(ctx, opts, out)
}

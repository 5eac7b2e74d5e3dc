// Package graph is wharf's image service: the one type the daemon calls for
// images (Service). It owns no storage and talks to no registry itself; it
// holds the rooms that do, each in a named field (graph/store for content,
// records and tags; graph/distribution for everything that reaches a
// registry, remote inspect with its verdict included; graph/archive for tar
// streams; graph/mirror for sync and the air gap; graph/updates for the
// update check), forwards to them one line per operation, and builds the
// answers in the API's shapes from what the store holds: inspect, list,
// history, tag, delete and prune as dockerd decides them.
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
	"github.com/wharfproject/wharf/graph/contents"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/graph/internal/ahead"
	"github.com/wharfproject/wharf/graph/mirror"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/graph/updates"
	"github.com/wharfproject/wharf/internal/rootlock"
)

// Options configure a Store.
type Options struct {
	// Root is the data-root; the OCI layout lives directly under it.
	Root string
	// Registry talks to registries; nil disables pull, push and remote inspect.
	Registry *distribution.Registry
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
	// LayerIndexBudget is the disk the layer indexes may use (<= 0: the
	// default, contents' indexcache.DefaultBudget).
	LayerIndexBudget int64
	// Contents is told of the layer indexes (metrics); nil = none.
	Contents contents.Observer
}

// EventLogger records image events for GET /events (see store.EventLogger).
type EventLogger = store.EventLogger

// Judge is the signature policy the daemon installs (SetPolicy):
// trust/policy's Policy.
type Judge = distribution.Judge

// Service is the image service the daemon calls: each method is one line
// into the room that does the work (see service.go), except the answers in
// the API's shapes, which this package builds.
type Service struct {
	images   *store.Store          // content, leases, image records, tags, GC
	dist     *distribution.Service // pull, push, copy, login, tags, remote inspect
	archive  *archive.Archiver     // load, save, import
	mirror   *mirror.Mirror        // sync, the archive export and import
	updates  *updates.Checker      // the update check
	contents *contents.Room        // ls, cat and cp over layer indexes

	opts Options
	log  *logrus.Entry

	inspects *inspectCache                           // remote inspect: config-derived fields by config digest
	guesses  *ahead.Memo[*distribution.RemoteLayers] // remote contents reads started ahead (contents_ahead.go)

	walkList bool // tests: the list walks every summary instead of the indexes (list.go)
}

// New opens (creating when needed) the store at opts.Root, cleans the ingest
// area and loads the image records.
func New(ctx context.Context, opts Options) (*Service, error) {
	if opts.MaxConcurrentDownloads <= 0 {
		opts.MaxConcurrentDownloads = 3
	}
	if opts.Logger == nil {
		opts.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	s := &Service{opts: opts, log: opts.Logger, inspects: newInspectCache(inspectCacheEntries), guesses: newAheadMemo()}
	records, err := store.Open(ctx, store.Options{Root: opts.Root, Logger: opts.Logger, Platform: opts.Platform, Lock: opts.Lock})
	if err != nil {
		return nil, err
	}
	s.images = records
	s.contents, err = contents.New(contents.Options{Dir: contents.DirIn(records.Root()), Budget: opts.LayerIndexBudget, Observer: opts.Contents})
	if err != nil {
		records.Close()
		return nil, err
	}
	s.dist = distribution.New(records, distribution.Options{
		Registry:               opts.Registry,
		Events:                 opts.Events,
		Platform:               opts.Platform,
		MaxConcurrentDownloads: opts.MaxConcurrentDownloads,
		Observer:               opts.Transfers,
		Indexer:                s.contents,
	})
	// A load is judged by the policy distribution holds (SetPolicy), under
	// its docker-archive transport.
	s.updates = updates.New(records, s.dist)
	s.updates.DiffWith(s)
	s.archive = archive.New(records, opts.Platform, opts.Events, s.dist.AdmitLoad)
	s.mirror = mirror.New(s.dist, records.Root())
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
// anything is uploaded, naming the tag.
func (s *Service) PushImage(ctx context.Context, opts types.PushOptions, out types.ProgressWriter) error {
	if opts.Platform != nil && opts.Tag == "" {
		if opts.Repo == nil {
			return fmt.Errorf("no repository to push%.0w", errdefs.ErrInvalidArgument)
		}
		repo := reference.TrimNamed(opts.Repo).String()
		imgs, err := s.images.ImagesByRepository(repo)
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

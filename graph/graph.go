// Package graph is wharf's local image store and tag store, and the code that
// moves images between it and registries (pull, push, remote inspect).
//
// The store is an OCI image layout (image-spec v1.1) under the data-root; see
// store.go for the on-disk tree. Descriptors travel between layers; tags are
// resolved only at the edge (Lookup, LookupRemote).
//
// Files: graph.go (this contract), store.go/content.go (layout, blobs, atomic
// writes), images.go (image records and tags), lookup.go, inspect.go (the one
// function that builds ImageInspect for local and remote images), list.go,
// history.go, tag.go, delete.go, events.go, changes.go/import.go, save.go,
// archive.go/load.go, bomb.go (the decompression cap), check.go (the store
// check behind `wharf system check` and start-up) — and remote.go,
// remote_inspect.go, distribution.go, pull.go, pull_layers.go, push.go,
// progress.go, login.go for the registry side.
package graph

import (
	"context"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"

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
}

// EventLogger records image events for GET /events. The daemon implements it.
type EventLogger interface {
	// LogImageEvent records action on the image (actorID: image ID or reference)
	// with attributes (at least "name").
	LogImageEvent(ctx context.Context, actorID string, action events.Action, attrs map[string]string)
}

// Store is the local image store plus its registry operations.
type Store struct {
	opts Options
	log  *logrus.Entry

	local  *localStore  // store.go: layout, content, image records, tags
	remote *remoteState // remote.go: in-flight pulls, shared downloads
}

// New opens (creating when needed) the store at opts.Root, cleans the ingest
// area and loads the image records.
func New(ctx context.Context, opts Options) (*Store, error) {
	if opts.MaxConcurrentDownloads <= 0 {
		opts.MaxConcurrentDownloads = 3
	}
	if opts.Logger == nil {
		opts.Logger = logrus.NewEntry(logrus.StandardLogger())
	}
	s := &Store{opts: opts, log: opts.Logger}
	l, err := newLocalStore(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.local = l
	s.remote = newRemoteState(opts)
	return s, nil
}

// Close releases the store's resources.
func (s *Store) Close() error { return s.local.close() }

// ImageRecord is one local image: what the tag store and RepoDigests point at.
type ImageRecord struct {
	// ID is the image ID: the config digest.
	ID digest.Digest
	// Target is the top-level descriptor as pulled or loaded (an index for a
	// multi-platform pull); RepoDigests pin it.
	Target ocispec.Descriptor
	// Manifest is the platform manifest whose config is ID.
	Manifest ocispec.Descriptor
	// RepoTags are fully qualified references (docker.io/library/busybox:latest);
	// shown in familiar form on the API.
	RepoTags []string
	// RepoDigests are fully qualified name@digest references.
	RepoDigests []string
	LastTagTime time.Time
	Created     time.Time
}

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

// Package graph is wharf's image service: the facade the daemon calls, over
// three packages with one job each —
//
//   - graph/store: the content (blobs), the leases that pin it, the image
//     records and tags, garbage collection and the store check; the one
//     owner of a blob's lifetime;
//   - graph/archive: images in and out of tar streams (load, save, import);
//   - graph/distribution: images between the store and registries (pull,
//     push, login, the registry side of remote inspect).
//
// What stays here reads the store and answers in the API's shapes: inspect.go
// (BuildInspect, the one function that builds ImageInspect for local and
// remote images), remote_inspect.go, list.go, history.go, tag.go, delete.go
// (delete and prune as dockerd decides them, each one store transaction).
package graph

import (
	"context"
	"fmt"
	"github.com/containerd/errdefs"
	"github.com/wharfproject/wharf/imagespec"
	"io"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/registry"

	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/archive"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/graph/store"
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
}

// EventLogger records image events for GET /events (see store.EventLogger).
type EventLogger = store.EventLogger

// Store is the local image store plus its registry operations.
type Store struct {
	opts Options
	log  *logrus.Entry

	st   *store.Store          // graph/store: content, leases, image records, tags, GC
	dist *distribution.Service // graph/distribution: pull, push, login, the registry side of inspect

	arc *archive.Archiver // graph/archive: load, save, import

	inspects *inspectCache // remote inspect: config-derived fields by config digest
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
	s := &Store{opts: opts, log: opts.Logger, inspects: newInspectCache(inspectCacheEntries)}
	st, err := store.Open(ctx, store.Options{Root: opts.Root, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	s.st = st
	s.arc = archive.New(st, opts.Platform, opts.Events)
	s.dist = distribution.New(st, distribution.Options{
		Registry:               opts.Registry,
		Events:                 opts.Events,
		Platform:               opts.Platform,
		MaxConcurrentDownloads: opts.MaxConcurrentDownloads,
		Observer:               opts.Transfers,
	})
	return s, nil
}

// Close releases the store's resources.
func (s *Store) Close() error { return s.st.Close() }

// LoadImage answers POST /images/load (see archive.Archiver.LoadImage).
func (s *Store) LoadImage(ctx context.Context, r io.Reader, quiet bool, platform *ocispec.Platform, out types.ProgressWriter) error {
	return s.arc.LoadImage(ctx, r, quiet, platform, out)
}

// CheckPlatform reports whether the local image name is stored for p: nil;
// NotFound (dockerd's wording) when it does not provide p; NotImplemented
// when p is another platform of its index, which wharfd does not act on
// separately (it keeps one platform per image). rmi, save and push with
// --platform ask it first, so that the flag is honoured or refused, never
// ignored.
func (s *Store) CheckPlatform(ctx context.Context, name string, p ocispec.Platform) error {
	rec, err := s.Lookup(ctx, name)
	if err != nil {
		return err
	}
	m, err := s.manifestForPlatform(rec, p)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if m.Digest != rec.Manifest.Digest {
		return fmt.Errorf("%s: %s is another platform of the image's index; wharfd keeps and acts on one platform per image (%s)%.0w",
			name, imagespec.FormatPlatform(p), rec.Manifest.Digest, errdefs.ErrNotImplemented)
	}
	return nil
}

// ExportImage answers GET /images/get (see archive.Archiver.ExportImage).
func (s *Store) ExportImage(ctx context.Context, names []string, w io.Writer) error {
	return s.arc.ExportImage(ctx, names, w)
}

// ImportImage answers POST /images/create?fromSrc=- (see
// archive.Archiver.ImportImage).
func (s *Store) ImportImage(ctx context.Context, src io.Reader, opts types.ImportOptions, out types.ProgressWriter) error {
	return s.arc.ImportImage(ctx, src, opts, out)
}

// PullImage answers POST /images/create?fromImage= (see
// distribution.Service.PullImage).
func (s *Store) PullImage(ctx context.Context, opts types.PullOptions, out types.ProgressWriter) error {
	return s.dist.PullImage(ctx, opts, out)
}

// PushImage answers POST /images/{name}/push.
func (s *Store) PushImage(ctx context.Context, opts types.PushOptions, out types.ProgressWriter) error {
	return s.dist.PushImage(ctx, opts, out)
}

// CopyImage answers POST /wharf/images/copy: registry to registry, without
// the local store (see distribution.Service.CopyImage).
func (s *Store) CopyImage(ctx context.Context, opts types.CopyOptions, out types.ProgressWriter) error {
	return s.dist.CopyImage(ctx, opts, out)
}

// Login validates auth against its registry (POST /auth).
func (s *Store) Login(ctx context.Context, auth *registrytypes.AuthConfig) (string, error) {
	return s.dist.Login(ctx, auth)
}

// DistributionInspect answers GET /distribution/{name}/json.
func (s *Store) DistributionInspect(ctx context.Context, name string, opts types.RemoteInspectOptions) (*registrytypes.DistributionInspect, error) {
	return s.dist.DistributionInspect(ctx, name, opts)
}

// RemoteManifest answers a remote inspect with raw=1.
func (s *Store) RemoteManifest(ctx context.Context, name string, opts types.RemoteInspectOptions) ([]byte, ocispec.Descriptor, error) {
	return s.dist.RemoteManifest(ctx, name, opts)
}

// Lookup finds a local image by name, name:tag, name@digest, ID or unique
// short ID (see store.Store.Lookup). The record is a copy.
func (s *Store) Lookup(ctx context.Context, name string) (*ImageRecord, error) {
	return s.st.Lookup(name)
}

// HasBlob reports whether the blob is in the store.
func (s *Store) HasBlob(d digest.Digest) bool { return s.st.HasBlob(d) }

// OpenBlob opens a stored blob.
func (s *Store) OpenBlob(d digest.Digest) (io.ReadCloser, int64, error) { return s.st.OpenBlob(d) }

// Count returns the number of images (for /info).
func (s *Store) Count() int { return s.st.Count() }

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

// Check verifies the store (see store.Store.Check); full also hashes every
// blob.
func (s *Store) Check(ctx context.Context, full bool) (*CheckReport, error) {
	return s.st.Check(ctx, full)
}

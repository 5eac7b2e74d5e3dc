package server

import (
	"context"
	"io"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/api/types/system"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// The server talks to the daemon only through these interfaces; the daemon
// implements all of them (Backend) by delegating to graph, so no route asks
// whether a method is there. Errors are classified with
// github.com/containerd/errdefs and mapped to HTTP status codes in one place
// (httperror.go).

// ImageBackend is the local image store.
type ImageBackend interface {
	// ImagesEach hands GET /images/json's entries over one at a time, in
	// the list's order, so that the list of 50,000 images is never held
	// whole (graph.Service.ImagesEach).
	ImagesEach(ctx context.Context, opts types.ImageListOptions, emit func(image.Summary) error) error
	ImageInspect(ctx context.Context, name string, opts types.InspectOptions) (*types.ImageInspect, error)
	ImageHistory(ctx context.Context, name string, platform *ocispec.Platform) ([]image.HistoryResponseItem, error)
	// TagImage points ref at the image name; ref is parsed and checked by
	// the handler (one parse per request, at the edge).
	TagImage(ctx context.Context, name string, ref reference.NamedTagged) error
	ImageDelete(ctx context.Context, name string, force, prune bool) ([]image.DeleteResponse, error)
	// ImageDeletePlatforms removes the platforms ps from the image name
	// (rmi --platform, API 1.50): the image stays while others remain.
	ImageDeletePlatforms(ctx context.Context, name string, ps []ocispec.Platform, force, prune bool) ([]image.DeleteResponse, error)
	ImportImage(ctx context.Context, src io.Reader, opts types.ImportOptions, out types.ProgressWriter) error
	// ExportImage saves names; platforms (API 1.48; several at 1.52) the
	// present platforms to save, none every present one.
	ExportImage(ctx context.Context, names []string, platforms []ocispec.Platform, w io.Writer) error
	// LoadImage loads an archive; platforms (API 1.48; several at 1.52)
	// the platforms of a multi-platform image to load, none every one the
	// archive holds.
	LoadImage(ctx context.Context, r io.Reader, quiet bool, platforms []ocispec.Platform, out types.ProgressWriter) error
	// CheckPlatform answers whether the local image name holds platform p:
	// nil, or NotFound when it does not. Push with --platform asks it
	// first.
	CheckPlatform(ctx context.Context, name string, p ocispec.Platform) error
	ImagesPrune(ctx context.Context, filters types.Filters) (*image.PruneReport, error)
	// ImageAttestations hands the in-toto statements attached to an image
	// (API 1.55) to emit one at a time, in order; with opts.Remote, as its
	// registry has them now. A statement's body is valid only during the
	// call (graph.Service.ImageAttestations).
	ImageAttestations(ctx context.Context, name string, opts types.AttestationOptions, emit func(image.AttestationStatement) error) error
	// ImageFiles hands the entries under opts.Path of an image (local, or
	// with opts.Remote as its registry has it) to emit one at a time, in
	// order (GET /wharf/images/{name}/files, contents_routes.go).
	ImageFiles(ctx context.Context, name string, opts types.FilesOptions, emit func(types.FileEntry) error) error
	// ImageStat is the stat of opts.Path, as docker's
	// X-Docker-Container-Path-Stat carries it (HEAD …/archive).
	ImageStat(ctx context.Context, name string, opts types.FilesOptions) (container.PathStat, error)
	// ImageArchive writes a tar of opts.Path: start is called once with
	// the path's stat before the first byte and returns where the tar goes
	// (GET …/archive).
	ImageArchive(ctx context.Context, name string, opts types.FilesOptions, start func(container.PathStat) (io.Writer, error)) error
	// ImageDiff compares two images by the sections asked for (GET
	// /wharf/images/diff, diff_routes.go).
	ImageDiff(ctx context.Context, req types.DiffRequest) (*types.ImageDiff, error)
	// ImagePackages lists the packages of an image (local, or with
	// opts.Remote as its registry has it), read without pulling it
	// (GET /wharf/images/{name}/packages, packages_routes.go).
	ImagePackages(ctx context.Context, name string, opts types.PackagesOptions) (*types.ImagePackages, error)
}

// RegistryBackend is everything that talks to a registry.
type RegistryBackend interface {
	PullImage(ctx context.Context, opts types.PullOptions, out types.ProgressWriter) error
	PushImage(ctx context.Context, opts types.PushOptions, out types.ProgressWriter) error
	LookupRemote(ctx context.Context, name string, opts types.RemoteInspectOptions) (*types.RemoteImageInspect, error)
	// RemoteManifest returns the manifest bytes as the registry served them
	// (wharf inspect --raw) and the registry's descriptor of them (media
	// type, and the digest the registry names them by).
	RemoteManifest(ctx context.Context, name string, opts types.RemoteInspectOptions) ([]byte, ocispec.Descriptor, error)
	DistributionInspect(ctx context.Context, name string, opts types.RemoteInspectOptions) (*registry.DistributionInspect, error)
	// Login validates credentials; it returns the identity token when the
	// registry issued one.
	Login(ctx context.Context, auth *registry.AuthConfig) (identityToken string, err error)
	// CopyImage copies an image registry to registry, without the local
	// store (POST /wharf/images/copy, copy_routes.go).
	CopyImage(ctx context.Context, opts types.CopyOptions, out types.ProgressWriter) error
	// SyncImages mirrors repositories registry to registry, each image
	// that differs through the copy (POST /wharf/images/sync,
	// sync_routes.go): one event per image through emit, a summary last.
	SyncImages(ctx context.Context, opts types.SyncOptions, emit func(types.SyncEvent) error) error
	// SyncExport writes what a sync selects as an OCI layout tar to w;
	// SyncImport pushes such a tar to opts.Destination (the air gap).
	SyncExport(ctx context.Context, opts types.SyncOptions, w io.Writer) (*types.SyncSummary, error)
	SyncImport(ctx context.Context, opts types.SyncOptions, body io.Reader, emit func(types.SyncEvent) error) error
	// CheckRemote is the update check: each local tag against its registry,
	// one result per tag through emit (POST /wharf/images/check-remote,
	// checkremote_routes.go).
	CheckRemote(ctx context.Context, opts types.RemoteCheckOptions, emit func(types.RemoteCheckResult) error) error
	// RemoteTags lists a repository's tags in its registry
	// (GET /wharf/images/{name}/tags, tags_routes.go).
	RemoteTags(ctx context.Context, name string, opts types.RemoteTagsOptions) (*types.RemoteTags, error)
}

// SystemBackend answers the system endpoints.
type SystemBackend interface {
	SystemInfo(ctx context.Context) (*system.Info, error)
	// RegistryStatus is /info's WharfRegistries: per registry host, its
	// rate limit as last seen and its back-off, if any.
	RegistryStatus(ctx context.Context) []types.RegistryStatus
	// SearchRegistries is /info's WharfSearchRegistries: the registries a
	// short name is searched on, in order.
	SearchRegistries(ctx context.Context) []string
	SystemVersion(ctx context.Context) system.VersionResponse
	// SystemDiskUsage returns the images part of /system/df in the API 1.50
	// shape (LayersSize, Images).
	SystemDiskUsage(ctx context.Context) (*types.DiskUsage, error)
	// SystemCheck runs the store check; full also hashes every blob
	// (GET /wharf/system/check, check_routes.go).
	SystemCheck(ctx context.Context, full bool) (*CheckReport, error)
	// SystemExportIndex writes the data-root's index.json now and says
	// where and with how many entries (POST /wharf/system/export-index,
	// export_index_routes.go).
	SystemExportIndex(ctx context.Context) (*ExportIndexReport, error)
	// TrustPolicy describes the signature policy: the scope that applies
	// to name, or every scope when name is "" (GET /wharf/trust,
	// trust_routes.go).
	TrustPolicy(ctx context.Context, name string) (*types.TrustPolicy, error)
}

// EventsBackend is the daemon's event log.
type EventsBackend interface {
	// SubscribeEvents returns the recorded events in [since, until] that match
	// the filters, and, when until is zero, a channel of the live ones; cancel
	// ends the subscription.
	SubscribeEvents(since, until time.Time, filters types.Filters) (past []types.EventMessage, live <-chan types.EventMessage, cancel func())
}

// Backend is everything the router needs.
type Backend interface {
	ImageBackend
	RegistryBackend
	SystemBackend
	EventsBackend
}

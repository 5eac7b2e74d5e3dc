// Package types holds what goes over wharfd's socket: the Docker Engine API wire
// types (taken from github.com/moby/moby/api wherever they match API 1.50) and
// wharf's own additions for remote inspection.
package types

import (
	"net/http"
	"time"

	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/api/types/system"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/imageref"
)

// ImageInspect is what GET /images/{name}/json answers, before version gating.
// The same value is built for a local and for a remote image (graph.BuildInspect).
type ImageInspect struct {
	image.InspectResponse

	// Legacy holds fields dockerd reports only to older API versions
	// (Parent/DockerVersion always below 1.52, Container/ContainerConfig below
	// 1.45, VirtualSize below 1.44). api/server adds them per version; they
	// never appear in the JSON of this struct itself.
	Legacy LegacyImageFields `json:"-"`

	// Trust is wharf's: the signature policy's verdict. Remote:
	// on the digest the name resolves to now, under a policy or with
	// verify=1. Local: the verdict the image was pulled under. Identity
	// (moby's, above) carries its signatures in moby's shape.
	Trust *Trust `json:",omitempty"`
}

// LegacyImageFields are the version-gated fields of ImageInspect.
type LegacyImageFields struct {
	Parent          string
	DockerVersion   string
	Container       string
	ContainerConfig *dockerspec.DockerOCIImageConfig
}

// RemoteImageInspect is the answer of GET /images/{name}/json?remote=1: the
// ImageInspect fields built by the same code as a local inspect, plus where the
// answer came from.
type RemoteImageInspect struct {
	ImageInspect

	// Registry is the index name that answered, e.g. "docker.io" or "localhost:5000".
	Registry string
	// ServedBy is the API host (host[:port]) that answered: a mirror's
	// (a hosts.toml [host] or a registry-mirror) or the upstream's; empty
	// when wharfd's content cache answered without a request.
	ServedBy string `json:",omitempty"`
	// Digest is the top-level manifest digest: what NAME@Digest pins (the index
	// digest for a multi-platform image).
	Digest string
	// Tag is the tag that was resolved; empty when the name was a digest.
	Tag string
	// PlatformManifestDigest is the digest of the platform manifest that was
	// chosen from an index; equal to Digest for a single-platform image.
	PlatformManifestDigest string `json:",omitempty"`
	// ManifestAnnotations are the annotations of the platform manifest.
	ManifestAnnotations map[string]string `json:",omitempty"`
	// BaseName and BaseDigest are the base the image says it was built
	// FROM (org.opencontainers.image.base.name and .digest):
	// from the platform manifest's annotations, else the config's labels
	// (BaseSource "annotations" or "labels"); absent when it names none.
	// The update check's base=1 compares them with what the base names now.
	BaseName   string `json:",omitempty"`
	BaseDigest string `json:",omitempty"`
	BaseSource string `json:",omitempty"`
	// Referrers lists what refers to the image, with referrers=1 only.
	Referrers *Referrers `json:",omitempty"`
	// RateLimit is what the registry that answered said last of its rate
	// limit to this identity; absent when it never sent RateLimit headers.
	RateLimit *RateLimit `json:",omitempty"`
}

// RateLimit is a registry's rate limit as its RateLimit-Limit and
// RateLimit-Remaining headers said it last (Docker Hub: "100;w=21600").
type RateLimit struct {
	// Limit is the requests allowed per Window; 0 when not said.
	Limit int64
	// Remaining is the requests left in the current window.
	Remaining int64
	// Window is the window in seconds (";w="); 0 when not said.
	Window int64
	// Host is the registry API host (host[:port]) that said it.
	Host string
	// Seen is when the answer carrying it arrived.
	Seen time.Time
}

// Info is /info's answer from API 1.50: Docker's fields in system.Info's
// order, then wharf's (older versions render the same fields through a
// map, api/server).
type Info struct {
	*system.Info
	// WharfRegistries is wharf's key, after Docker's (which it never
	// changes), present when a registry sent rate-limit headers or is
	// backed off.
	WharfRegistries []RegistryStatus `json:",omitempty"`
	// WharfSearchRegistries are the registries a short name is searched
	// on, in order (add-registry, then docker.io, none blocked): a client
	// sends its stored credentials for each, keyed by registry.
	WharfSearchRegistries []string `json:",omitempty"`
}

// RegistryStatus is one registry host in /info's WharfRegistries (a
// wharf key beside Docker's fields): its rate limit as last seen (by
// whichever identity) and, while a 429 or 503 with Retry-After backs it
// off, when the gate opens and when the registry said the limit resets.
type RegistryStatus struct {
	Host         string
	RateLimit    *RateLimit `json:",omitempty"`
	BackoffUntil *time.Time `json:",omitempty"`
	LimitResets  *time.Time `json:",omitempty"`
}

// InspectOptions are the query options of GET /images/{name}/json.
type InspectOptions struct {
	// Manifests adds the Manifests list (API >= 1.48).
	Manifests bool
	// Platform selects an index entry (API >= 1.49); nil means the daemon's platform.
	Platform *ocispec.Platform
}

// RemoteInspectOptions are the options of a remote inspect.
type RemoteInspectOptions struct {
	InspectOptions
	// Auth is the decoded X-Registry-Auth; nil means anonymous.
	Auth *registry.AuthConfig
	// Registries are credentials keyed by registry (X-Registry-Config),
	// used instead of Auth when not nil: each registry searched gets the
	// set keyed by it, and only that one.
	Registries map[string]registry.AuthConfig
	// MetaHeaders are the client's X-Meta-* headers, passed on to the registry.
	MetaHeaders http.Header
	// Raw asks for the manifest bytes as served (wharf inspect --raw).
	Raw bool
	// Referrers, when set, adds the Referrers list (referrers=1).
	Referrers *ReferrersQuery
	// Verify verifies the image's signatures even without a signature
	// policy (verify=1); under a policy every remote inspect verifies.
	Verify bool
}

// ImageListOptions are the query options of GET /images/json.
type ImageListOptions struct {
	All       bool
	Digests   bool
	Manifests bool
	// Identity (API 1.54, with Manifests) fills each image manifest's
	// ImageData.Identity.
	Identity bool
	Filters  Filters
}

// ImportOptions are the query options of POST /images/create?fromSrc=-.
type ImportOptions struct {
	Repo     string // repository[:tag] to tag the import with; empty = untagged
	Tag      string
	Changes  []string // Dockerfile instructions: CMD, ENTRYPOINT, ENV, EXPOSE, LABEL, USER, WORKDIR, VOLUME, STOPSIGNAL
	Message  string
	Platform *ocispec.Platform
}

// PullOptions are the options of POST /images/create?fromImage=….
type PullOptions struct {
	// Ref is the image, parsed once by the API server (imageref.ForPull:
	// the tag parameter applied, scratch refused); with neither tag nor
	// digest, every tag is pulled. A short name stays short, for the
	// registry search order.
	Ref         imageref.Ref
	Platform    *ocispec.Platform
	Auth        *registry.AuthConfig
	Registries  map[string]registry.AuthConfig // X-Registry-Config, as RemoteInspectOptions.Registries
	MetaHeaders http.Header
}

// PushOptions are the options of POST /images/{name}/push.
type PushOptions struct {
	// Repo is the repository, parsed once by the API server (a tag in the
	// request's name is dropped, as dockerd does).
	Repo reference.Named
	Tag  string // empty = all local tags of the repository
	// Platform (API 1.46+): push the image only if it is stored for it.
	Platform    *ocispec.Platform
	Auth        *registry.AuthConfig
	Registries  map[string]registry.AuthConfig // X-Registry-Config, as RemoteInspectOptions.Registries
	MetaHeaders http.Header
}

// ProgressWriter receives the messages of a long operation (pull, push, load,
// import). api/server's implementation sends the HTTP status line on the first
// message only, so an error returned before any message becomes a plain error
// response; errors after it go in-stream as errorDetail.
type ProgressWriter interface {
	WriteMessage(m jsonstream.Message) error
}

// ProgressFunc adapts a function to ProgressWriter.
type ProgressFunc func(m jsonstream.Message) error

// WriteMessage calls f(m).
func (f ProgressFunc) WriteMessage(m jsonstream.Message) error { return f(m) }

// DiscardProgress drops every message.
var DiscardProgress ProgressWriter = ProgressFunc(func(jsonstream.Message) error { return nil })

// PushResult is the aux message at the end of a push stream.
type PushResult struct {
	Tag    string
	Digest string
	Size   int
}

// DiskUsage is GET /system/df in the API 1.50 shape, images part filled;
// containers, volumes and build cache are always empty on wharfd.
type DiskUsage struct {
	LayersSize int64
	Images     []image.Summary
	Containers []struct{}
	Volumes    []struct{}
	BuildCache []struct{}
	// BuilderSize is the build cache's size, always 0. dockerd 20.10 always
	// sends it and newer dockerd omits it when 0; clients written against
	// the older answer read it without checking (Python's df()["BuilderSize"]).
	BuilderSize int64
	// PartialDownloads and PartialDownloadsSize are wharf's own: the partial
	// downloads kept for the next pull of their blob, not in LayersSize
	// (docs/reliability.md).
	PartialDownloads     int   `json:",omitempty"`
	PartialDownloadsSize int64 `json:",omitempty"`
	// LayerIndexes and LayerIndexesSize are wharf's own too: the layer
	// indexes ls, cat and cp read, under their own budget
	// (layer-index-budget), not in LayersSize.
	LayerIndexes     int   `json:",omitempty"`
	LayerIndexesSize int64 `json:",omitempty"`
}

// CopyOptions are the options of POST /wharf/images/copy (wharf's own): copy
// an image from one registry to another through the daemon, without the
// local store.
type CopyOptions struct {
	Source      string // NAME[:TAG|@DIGEST] as typed
	Destination string // NAME[:TAG][@DIGEST]; without either, Source's tag
	// Platform copies only that platform's manifest of an index (its digest
	// is what DST then holds). Nil with a Source index copies every platform
	// and the index bytes exactly: AllPlatforms is that default made explicit.
	Platform     *ocispec.Platform
	AllPlatforms bool
	// IncludeForeign copies foreign (non-distributable) layers, those with
	// urls; by default they are left where the urls point.
	IncludeForeign bool
	// WithReferrers copies, after the image, what refers to it at Source
	// (its top level and the platform manifests copied): signatures, SBOMs,
	// attestations found through the referrers API, the tag schema, or
	// cosign's tags.
	WithReferrers bool
	// Auth holds credentials per registry (X-Registry-Config): each set is
	// sent only to the registry its key names.
	Auth        map[string]registry.AuthConfig
	MetaHeaders http.Header
}

// CopyResult is the aux message at the end of a copy stream.
type CopyResult struct {
	Source      string // what was resolved, NAME@DIGEST
	Destination string // NAME[:TAG]@DIGEST written
	Digest      string // the top-level digest at the destination
	MediaType   string
	Size        int
	// Blobs counts the distinct blobs the image needs; Existed, Mounted and
	// Uploaded how each reached the destination; Skipped the foreign layers
	// left out. BytesUploaded is what crossed from source to destination.
	Blobs, Existed, Mounted, Uploaded, Skipped int
	BytesUploaded                              int64
	// Referrers counts the referrer manifests copied (WithReferrers); their
	// blobs are counted with the image's above.
	Referrers int `json:",omitempty"`
	// SourceTrust is the signature policy's verdict on SRC, under SRC's
	// scope, before anything moved; DestinationTrust the verdict at DST,
	// under DST's scope, after the signatures travelled (WithReferrers).
	// Both absent without a policy.
	SourceTrust      *Trust `json:",omitempty"`
	DestinationTrust *Trust `json:",omitempty"`
}

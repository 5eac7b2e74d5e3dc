// Package registry is wharf's registry client: reference resolution
// (RepositoryInfo / IndexInfo, candidates), which credentials go where
// (credentials.go), login, resolution and the reads of manifests and
// blobs across mirrors, the caches and the typed errors. The protocol's
// other rooms sit below it, and never import it:
//
//	registry ──► registry/upload, registry/referrers, registry/listing,
//	             registry/blobs, registry/v1 ──► registry/transport ──► registry/hosts
//
// registry/referrers pages through registry/listing, and registry/v1 checks
// a host with registry/hosts. registry/upload is the blob upload protocol of push and copy;
// registry/referrers lists and writes what refers to an image and reads
// its signatures; registry/listing is the paged listings (tags, catalog)
// and the Link pagination; registry/blobs is a blob's GET and HEAD on one
// endpoint and the body resumed where it breaks; registry/v1 is the
// read-only v1 protocol of a registry without v2. Each speaks to a
// repository through a small interface declared where it is used, which
// this package implements (target in repository.go, v1Target in v1.go).
//
// registry/hosts is the configuration (options, hosts.toml, certs.d): it
// hands out each registry's endpoints in order; registry/transport is the
// one HTTP stack every request goes through (its package doc draws the
// chain). Beyond those it imports imagespec, trust and internal/ctxio.
//
// This file is the contract the rest of wharf programs against; the
// implementation lives beside it (one file per concern).
package registry

import (
	"net/http"
	"time"

	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
	"github.com/wharfproject/wharf/registry/hosts"
)

// DefaultIndexName is the index that short names resolve to.
const DefaultIndexName = hosts.DefaultIndexName

// IndexServerAddress is what docker login stores for Docker Hub.
const IndexServerAddress = hosts.IndexServerAddress

// RedactAddress replaces the credentials of a server address with "xxxxx"
// (hosts.RedactAddress), so that an error or a log line may repeat it.
func RedactAddress(s string) string { return hosts.RedactAddress(s) }

// ServiceOptions configure a Service; zero values are the defaults.
type ServiceOptions struct {
	// InsecureRegistries are hosts[:port] or CIDRs spoken to over plain HTTP
	// (and HTTPS without verification). 127.0.0.0/8 is always insecure, as in dockerd.
	InsecureRegistries []string
	// Mirrors are tried, in order, before docker.io (and before the mirrors
	// of docker.io's hosts.toml) for docker.io names.
	Mirrors []string
	// AddRegistries are searched, in order, before docker.io for short names.
	AddRegistries []string
	// BlockRegistries are refused (errdefs.ErrPermissionDenied); "all" blocks
	// every registry not named in AddRegistries.
	BlockRegistries []string
	// CertsDirs hold <host[:port]>/{hosts.toml,*.crt,client.cert,client.key}
	// (hosts.go: mirrors in containerd's format); default /etc/wharf/certs.d
	// and /etc/docker/certs.d.
	CertsDirs []string
	// Transport overrides the base transport (tests); nil = a tuned http.Transport.
	Transport http.RoundTripper
	// Timeout, when positive, replaces the response-header timeout and the
	// slow-body window (30 s each by default: a response body must move
	// 1 KiB, and an upload make progress, in every window) and caps the dial
	// and TLS handshake timeouts (10 s). 0 keeps the defaults.
	Timeout time.Duration
	// UserAgent is sent on every request.
	UserAgent string
	Logger    *logrus.Entry
	// Observer is told of every request and cache look-up (metrics.go); nil = none.
	Observer Observer
}

// hostsOptions are the settings registry/hosts takes.
func (o ServiceOptions) hostsOptions() hosts.Options {
	return hosts.Options{
		InsecureRegistries: o.InsecureRegistries,
		Mirrors:            o.Mirrors,
		AddRegistries:      o.AddRegistries,
		BlockRegistries:    o.BlockRegistries,
		CertsDirs:          o.CertsDirs,
	}
}

// RepositoryInfo describes a repository and the index it lives on.
type RepositoryInfo struct {
	Name     reference.Named // fully qualified, e.g. docker.io/library/busybox
	Index    *registrytypes.IndexInfo
	Official bool
}

// Credentials are what a request to a registry carries. Which registry
// receives which set is decided in one place (credentials.go, bound and For).
type Credentials struct {
	// Auth is one set: the decoded X-Registry-Auth; nil = anonymous. Its
	// ServerAddress names the registry it belongs to; empty, it belongs to
	// the registry of the request (for a short name, the first searched).
	Auth *registrytypes.AuthConfig
	// Registries are sets keyed by registry (X-Registry-Config of a copy,
	// an update check, a pull, a push or a remote inspect); used instead of
	// Auth when not nil: a repository gets the set keyed by its registry,
	// matched as logins are, and so does each candidate of a search.
	Registries map[string]registrytypes.AuthConfig
	// MetaHeaders (X-Meta-*) are added to every registry request.
	MetaHeaders http.Header
}

// InspectRequest asks for an image's metadata without its layers.
type InspectRequest struct {
	// Name is NAME[:TAG|@DIGEST] as the user typed it; short names are searched
	// through AddRegistries, then docker.io.
	Name        string
	Platform    ocispec.Platform // the platform to pick from an index (the caller fills the default)
	Credentials Credentials
	// Referrers, when set, asks for what refers to the image too
	// (registry/referrers); nil costs no request.
	Referrers *ReferrersOptions
	// OnManifest, when set, is told the platform manifest and the
	// repository it came from before the config is fetched, so that the
	// caller can start reading layers a round trip early. It must not
	// block. A request that joins an identical one in flight is not told.
	OnManifest func(repo *Repository, desc ocispec.Descriptor, m *ocispec.Manifest)
}

// TopLevel is what a name resolved to on one repository: the top-level
// document exactly as the registry served it, under the digest the
// registry names it by. Resolved and RemoteImage both carry it.
type TopLevel struct {
	Registry string          // index name that answered
	Name     reference.Named // fully qualified repository that answered
	Tag      string          // resolved tag; empty for a digest reference

	// Descriptor is the top-level manifest or index: its digest is the
	// registry's (what NAME@digest pins; for signed schema1 not the hash of
	// Raw, for a sha512 reference a sha512 digest).
	Descriptor ocispec.Descriptor
	Raw        []byte         // top-level bytes as served
	Index      *ocispec.Index // set when the top level is an index / manifest list
	// ServedBy is the API host that answered the resolution: a mirror's,
	// or the upstream's; empty when wharfd's content cache answered.
	ServedBy string
}

// RemoteImage is what a remote inspect learned about one image: the top
// level, and the platform's manifest, config and layers.
type RemoteImage struct {
	TopLevel

	Manifest      ocispec.Descriptor // the chosen platform manifest
	ManifestBytes []byte
	Parsed        *ocispec.Manifest // the platform manifest, parsed (nil for schema1 and v1)
	Layers        []ocispec.Descriptor
	Annotations   map[string]string // of the platform manifest

	Config      ocispec.Descriptor
	ConfigBytes []byte // image config JSON; for v1/schema1, the v1Compatibility JSON

	// V1 is set when the answer came from a v1 registry or a schema1 manifest.
	V1 bool

	// Referrers are set when InspectRequest.Referrers asked for them.
	Referrers []Referrer

	// RateLimit is what the registry that answered last said of its rate
	// limit to this identity (RateLimit-* headers); nil when it sent none.
	RateLimit *RateLimit

	// repo is the repository the answer was read through, with the
	// credentials the search bound to it (none at a later candidate of a
	// short name): what reads more about this image (its signatures) uses,
	// so that nothing binds the request's credentials a second time, to
	// whichever registry answered.
	repo *Repository
}

// Repository is the repository the image was read through, its
// credentials bound once by the search that found it (nil for a
// RemoteImage not made by this package).
func (ri *RemoteImage) Repository() *Repository { return ri.repo }

package distribution

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/singleflight"

	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/imageref"
	"github.com/wharfproject/wharf/registry"
)

// blobTransfers is what the blob transfers of one Service share across its
// concurrent pulls and pushes: one download in flight per digest, the bound
// on downloads per pull, and the observer of pulls and bytes moved.
type blobTransfers struct {
	// downloads shares one blob download between concurrent pulls that want
	// the same digest; the key is the digest.
	downloads singleflight.Group
	// maxDownloads bounds concurrent layer downloads per pull.
	maxDownloads int
	// flightJoined, when set (tests only), is called after each caller
	// joins or starts the shared download of a digest.
	flightJoined func(key string)
	// obs is told of pulls and transferred bytes (metrics.go).
	obs Observer
	// indexer builds the index of each layer a pull downloads from its
	// first byte (pull_index.go); nil: none.
	indexer LayerIndexer
}

// maxConcurrentUploads bounds concurrent uploads per push in each pool of
// its plan (layers, and configs beside them); dockerd's default
// max-concurrent-uploads is 5.
const maxConcurrentUploads = 5

func newBlobTransfers(opts Options) *blobTransfers {
	n := opts.MaxConcurrentDownloads
	if n <= 0 {
		n = 3
	}
	return &blobTransfers{maxDownloads: n, obs: observer(opts.Observer), indexer: opts.Indexer}
}

// credentials are a request's credentials as the registry client takes
// them: one set (X-Registry-Auth), or sets keyed by registry
// (X-Registry-Config), used instead when not nil.
func credentials(auth *registrytypes.AuthConfig, regs map[string]registrytypes.AuthConfig, meta http.Header) registry.Credentials {
	return registry.Credentials{Auth: auth, Registries: regs, MetaHeaders: meta}
}

// platformOr is p, or the daemon's platform when p is nil.
func (s *Service) platformOr(p *ocispec.Platform) ocispec.Platform {
	if p != nil && p.OS != "" {
		return *p
	}
	return s.platform
}

// typedName is a name as the user typed it, split into the repository part
// (still short, for registry.Candidates) and its tag or digest.
type typedName struct {
	Repo   string
	Tag    string
	Digest digest.Digest
}

// splitTypedName parses NAME[:TAG][@DIGEST] without normalising the
// repository, so that short names stay short for the registry search order.
func splitTypedName(name string) (typedName, error) {
	ref, err := reference.Parse(name)
	if err != nil {
		return typedName{}, fmt.Errorf("invalid reference format: %s: %w", name, errors.Join(err, errdefs.ErrInvalidArgument))
	}
	named, ok := ref.(reference.Named)
	if !ok {
		return typedName{}, fmt.Errorf("invalid reference format: %s: repository name must be given%.0w", name, errdefs.ErrInvalidArgument)
	}
	tn := typedName{Repo: named.Name()}
	if t, ok := ref.(reference.Tagged); ok {
		tn.Tag = t.Tag()
	}
	if d, ok := ref.(reference.Digested); ok {
		tn.Digest = d.Digest()
	}
	return tn, nil
}

// findByName resolves a name that arrives as a string (remote inspect,
// attestations, copy, distribution inspect): it is parsed here, once, and
// the registry search reads the typed reference.
func findByName(ctx context.Context, svc *registry.Service, name string, creds registry.Credentials) (*registry.Resolved, error) {
	ref, err := imageref.Parse(name)
	if err != nil {
		return nil, err
	}
	return svc.FindImage(ctx, ref, creds)
}

// pin returns the tag or digest that identifies the manifest: the digest
// wins over a tag, as in distribution.
func (t typedName) pin() string {
	if t.Digest != "" {
		return t.Digest.String()
	}
	return t.Tag
}

// String is the name as typed: REPO[:TAG][@DIGEST].
func (t typedName) String() string {
	return imagespec.FormatReference(t.Repo, t.Tag, t.Digest.String())
}

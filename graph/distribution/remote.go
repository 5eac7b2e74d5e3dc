package distribution

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/singleflight"

	"github.com/wharfproject/wharf/registry"
)

// remoteState is what the registry side of the store shares between
// concurrent operations.
type remoteState struct {
	// downloads shares one blob download between concurrent pulls that want
	// the same digest; the key is the digest.
	downloads singleflight.Group
	// maxDownloads bounds concurrent layer downloads per pull.
	maxDownloads int
	// flightJoined, when set (tests only), is called after each caller
	// joins or starts the shared download of a digest.
	flightJoined func(key string)
}

// maxConcurrentUploads bounds concurrent layer uploads per push; dockerd's
// default max-concurrent-uploads is 5.
const maxConcurrentUploads = 5

func newRemoteState(opts Options) *remoteState {
	n := opts.MaxConcurrentDownloads
	if n <= 0 {
		n = 3
	}
	return &remoteState{maxDownloads: n}
}

func credentials(auth *registrytypes.AuthConfig, meta http.Header) registry.Credentials {
	return registry.Credentials{Auth: auth, MetaHeaders: meta}
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

// pin returns the tag or digest that identifies the manifest: the digest
// wins over a tag, as in distribution.
func (t typedName) pin() string {
	if t.Digest != "" {
		return t.Digest.String()
	}
	return t.Tag
}

// withPin adds the tag or digest of t to the fully qualified repository.
func (t typedName) withPin(repo reference.Named) (reference.Named, error) {
	repo = reference.TrimNamed(repo)
	if t.Digest != "" {
		return reference.WithDigest(repo, t.Digest)
	}
	if t.Tag != "" {
		return reference.WithTag(repo, t.Tag)
	}
	return repo, nil
}

// resolvedRemote is a tag or digest resolved on one repository.
type resolvedRemote struct {
	Repo *registry.Repository
	Ref  reference.Named // fully qualified, with the tag or digest
	Desc ocispec.Descriptor
}

// resolveRemote tries the candidate repositories of tn in order and returns
// the first that has the tag or digest. Only "not found" moves on to the
// next candidate; any other error (auth, network) is the answer, so a
// typo'd password is not hidden behind a later 404.
func (s *Service) resolveRemote(ctx context.Context, tn typedName, creds registry.Credentials) (*resolvedRemote, error) {
	svc, err := s.registryService()
	if err != nil {
		return nil, err
	}
	cands, err := svc.Candidates(tn.Repo)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, cand := range cands {
		ref, err := tn.withPin(cand)
		if err != nil {
			return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
		}
		repo, err := svc.Repository(ctx, reference.TrimNamed(cand), creds)
		if err != nil {
			return nil, err
		}
		desc, err := repo.Resolve(ctx, tn.pin())
		if err == nil {
			return &resolvedRemote{Repo: repo, Ref: ref, Desc: desc}, nil
		}
		if !errdefs.IsNotFound(err) {
			return nil, err
		}
		lastErr = fmt.Errorf("manifest for %s not found: %w", reference.FamiliarString(ref), err)
		if strings.HasPrefix(err.Error(), "manifest for ") {
			lastErr = err
		}
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("no registry to search for %s%.0w", tn.Repo, errdefs.ErrNotFound)
	}
	return nil, lastErr
}

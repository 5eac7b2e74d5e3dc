package registry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry/hosts"
	"github.com/wharfproject/wharf/registry/transport"
)

const oauthClientID = "wharf"

// repositoryPath is the distribution spec's repository name: path
// components of lower-case alphanumerics joined by '.', '_', '__' or '-'s.
var repositoryPath = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*)*$`)

func validateRepositoryPath(path string) error {
	if !repositoryPath.MatchString(path) {
		return fmt.Errorf("invalid reference: invalid repository %q%.0w", path, errdefs.ErrInvalidArgument)
	}
	return nil
}

// Repository is a client for one repository on one registry.
type Repository struct {
	svc      *Service
	info     *RepositoryInfo
	path     string // repository path on the index, e.g. library/busybox
	identity string
	auth     *registrytypes.AuthConfig

	// reads try endpoints in order (mirrors first for docker.io); writes go
	// to upstream, the last one.
	endpoints []*repoEndpoint
	upstream  *repoEndpoint
	served    atomic.Pointer[string] // host of the last endpoint that answered a read
}

// repoEndpoint is one endpoint with the client that authorizes its
// requests (transport.Client: tokens of this repository's identity).
type repoEndpoint struct {
	*endpoint
	client *transport.Client
}

// target is the repository on one endpoint as the protocol packages below
// speak to it (upload.Target, listing.Target, referrers.Target,
// blobs.Target).
type target struct {
	r  *Repository
	ep *repoEndpoint
}

func (t target) Host() string    { return t.ep.host }
func (t target) BaseURL() string { return t.ep.baseURL() }
func (t target) Path() string    { return t.r.path }
func (t target) Do(req *http.Request) (*http.Response, error) {
	return t.ep.client.Do(req)
}
func (t target) HeadBlob(ctx context.Context, d digest.Digest) (int64, error) {
	return t.r.headBlob(ctx, t.ep, d)
}
func (t target) GetManifest(ctx context.Context, ref string) (ocispec.Descriptor, []byte, error) {
	return t.r.getManifest(ctx, t.ep, ref, "")
}

// PutManifest, PushManifest, FetchManifest and FetchBlob are the
// repository's: writes go to the upstream, reads to any endpoint that may
// pull.
func (t target) PutManifest(ctx context.Context, desc ocispec.Descriptor, content []byte, ref string) (string, error) {
	return t.r.putManifest(ctx, desc, content, ref)
}
func (t target) PushManifest(ctx context.Context, desc ocispec.Descriptor, content []byte, tag string) error {
	return t.r.PushManifest(ctx, desc, content, tag)
}
func (t target) FetchManifest(ctx context.Context, desc ocispec.Descriptor) ([]byte, error) {
	return t.r.FetchManifest(ctx, desc)
}
func (t target) FetchBlob(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return t.r.FetchBlob(ctx, desc)
}

// Cached and Cache are the content cache under the repository's scope: a
// hit only when this scope was authorized for it.
func (t target) Cached(d digest.Digest) ([]byte, bool) {
	b, _, ok, authorized := t.r.svc.content.get(d, t.r.scope())
	return b, ok && authorized
}
func (t target) Cache(d digest.Digest, mediaType string, b []byte) {
	t.r.svc.content.put(d, mediaType, b, t.r.scope())
}

// Repository returns a client for one repository (mirrors first for docker.io).
func (s *Service) Repository(ctx context.Context, name reference.Named, creds Credentials) (*Repository, error) {
	return s.repository(ctx, s.config(), name, creds)
}

// repository is Repository under cfg: the name's index and its endpoints
// from one configuration.
func (s *Service) repository(ctx context.Context, cfg *hosts.Config, name reference.Named, creds Credentials) (*Repository, error) {
	info, err := repositoryInfo(cfg, name)
	if err != nil {
		return nil, err
	}
	index := info.Index.Name
	creds = creds.bound(index) // credentials.go: the one place that decides
	r := &Repository{
		svc:  s,
		info: info,
		path: reference.Path(name),
		// The identity this repository's requests really carry: credentials
		// bound to another registry are anonymous here.
		identity: credentialIdentity(creds.For(index)),
		auth:     creds.For(index),
	}
	eps, err := s.endpointsFor(ctx, cfg, index)
	if err != nil {
		return nil, err
	}
	for _, ep := range eps {
		re, err := s.newRepoEndpoint(ep, r.path, index, creds)
		if err != nil {
			return nil, err
		}
		r.endpoints = append(r.endpoints, re)
	}
	r.upstream = r.endpoints[len(r.endpoints)-1]
	return r, nil
}

func (s *Service) newRepoEndpoint(ep *endpoint, path, index string, creds Credentials) (*repoEndpoint, error) {
	header := http.Header{}
	for k, v := range creds.MetaHeaders {
		header[http.CanonicalHeaderKey(k)] = append([]string(nil), v...)
	}
	for k, v := range ep.header {
		header[k] = append([]string(nil), v...)
	}
	if s.opts.UserAgent != "" {
		header.Set("User-Agent", s.opts.UserAgent)
	}
	if err := validateRepositoryPath(path); err != nil {
		return nil, err
	}
	cfg := transport.ClientConfig{
		Header:   header,
		Identity: credentialIdentity(creds.Auth),
		ClientID: oauthClientID,
		// A hosts.toml root off /v2 is not the API the realm memo knows.
		NoRealmMemo: ep.rooted && ep.root != "/v2" && !strings.HasPrefix(ep.root, "/v2/"),
	}
	if ep.rooted {
		cfg.HTTP = &http.Client{Transport: rootRewrite{host: ep.host, root: ep.root, next: s.client.Transport}, CheckRedirect: transport.CheckRedirect}
	}
	if hosts.IsLoopbackHost(ep.host) {
		cfg.BlockedRealmPrefixes = transport.LoopbackRealmPrefixes()
	}
	// Credentials go to the host they belong to only (credentials.go): the
	// upstream gets the index's, a mirror only a set stored for itself.
	if !ep.mirror {
		cfg.Credential = sendOnlyTo(creds.For(index), ep.host)
	} else {
		cfg.Credential = sendOnlyTo(creds.For(ep.host), ep.host)
	}
	return &repoEndpoint{endpoint: ep, client: s.http.NewClient(cfg)}, nil
}

// creds returns the credentials of this repository's index (bound, For).
func (r *Repository) creds() *registrytypes.AuthConfig {
	return r.auth
}

// Info describes the repository.
func (r *Repository) Info() *RepositoryInfo { return r.info }

// scope is what authorizes cached content: registry/repository and the
// credential identity of this client.
func (r *Repository) scope() string { return r.info.Index.Name + "/" + r.path + "\x00" + r.identity }

// readEach runs fn against each endpoint that may pull (blobs, manifests
// and configs by digest) in order until one succeeds. A mirror's failure is
// logged and the next endpoint tried; the upstream's error is returned.
func (r *Repository) readEach(ctx context.Context, fn func(ep *repoEndpoint) error) error {
	return r.tryEach(ctx, hosts.CapPull, fn)
}

// resolveEach is readEach for the endpoints that may resolve a tag (and
// list tags).
func (r *Repository) resolveEach(ctx context.Context, fn func(ep *repoEndpoint) error) error {
	return r.tryEach(ctx, hosts.CapResolve, fn)
}

func (r *Repository) tryEach(ctx context.Context, want hosts.Capabilities, fn func(ep *repoEndpoint) error) error {
	var err error
	for _, ep := range r.endpoints {
		if ep != r.upstream && (ep.caps&want == 0 || (ep.mirror && r.svc.mirrorPassedOver(ep.host))) {
			continue
		}
		err = fn(ep)
		if err == nil {
			if ep.mirror {
				r.svc.mirrorAnswered(ep.host)
			}
			r.served.Store(&ep.host)
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		if ep.mirror {
			r.svc.mirrorFailed(ep.host, r.info.Index.Name, err)
		}
	}
	return err
}

// servedBy is the host that answered this repository's last read.
func (r *Repository) servedBy() string {
	if h := r.served.Load(); h != nil {
		return *h
	}
	return ""
}

// parseRef validates a tag or digest before any URL is built.
func parseRef(tagOrDigest string) (tag string, dgst digest.Digest, err error) {
	if d, err := digest.Parse(tagOrDigest); err == nil {
		return "", d, nil
	}
	if imagespec.ValidTag(tagOrDigest) {
		return tagOrDigest, "", nil
	}
	return "", "", fmt.Errorf("invalid tag or digest %q%.0w", tagOrDigest, errdefs.ErrInvalidArgument)
}

// Descriptor turns a tag or a digest into the top-level descriptor (HEAD first,
// GET when HEAD gives no digest). Missing repository or tag: errdefs.ErrNotFound.
func (r *Repository) Descriptor(ctx context.Context, tagOrDigest string) (ocispec.Descriptor, error) {
	if _, _, err := parseRef(tagOrDigest); err != nil {
		return ocispec.Descriptor{}, err
	}
	var desc ocispec.Descriptor
	err := r.resolveEach(ctx, func(ep *repoEndpoint) error {
		d, ok, err := r.headManifest(ctx, ep, tagOrDigest)
		if err != nil {
			return err
		}
		if !ok {
			d, _, err = r.getManifest(ctx, ep, tagOrDigest, "")
			if err != nil {
				return err
			}
		}
		desc = d
		return nil
	})
	return desc, err
}

func validateDescriptor(desc ocispec.Descriptor) error {
	if err := desc.Digest.Validate(); err != nil {
		return fmt.Errorf("invalid digest %q: %w%.0w", desc.Digest, err, errdefs.ErrInvalidArgument)
	}
	if desc.Size < 0 {
		return fmt.Errorf("invalid size %d for %s%.0w", desc.Size, desc.Digest, errdefs.ErrInvalidArgument)
	}
	return nil
}

// BlobExists asks the registry (HEAD) whether it has the blob.
func (r *Repository) BlobExists(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	if err := validateDescriptor(desc); err != nil {
		return false, err
	}
	_, err := r.headBlob(ctx, r.upstream, desc.Digest)
	switch {
	case errdefs.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// PushManifest uploads a manifest or index and, when tag is not empty, tags it.
func (r *Repository) PushManifest(ctx context.Context, desc ocispec.Descriptor, content []byte, tag string) error {
	if err := validateDescriptor(desc); err != nil {
		return err
	}
	if int64(len(content)) != desc.Size || desc.Digest.Algorithm().FromBytes(content) != desc.Digest {
		return fmt.Errorf("manifest content does not match %s (%d bytes)%.0w", desc.Digest, desc.Size, errdefs.ErrInvalidArgument)
	}
	if len(content) > maxManifestSize {
		return fmt.Errorf("manifest %s is larger than %d bytes%.0w", desc.Digest, maxManifestSize, errdefs.ErrInvalidArgument)
	}
	ref := desc.Digest.String()
	if tag != "" {
		if !imagespec.ValidTag(tag) {
			return fmt.Errorf("invalid tag %q%.0w", tag, errdefs.ErrInvalidArgument)
		}
		ref = tag
	}
	if _, err := r.putManifest(ctx, desc, content, ref); err != nil {
		return err
	}
	r.svc.warm.add(r.scope())
	return nil
}

// CacheScope is the repository and the credential identity it reads
// under: what an answer read through it may be cached by and shown to
// (the signature verdicts of graph/distribution).
func (r *Repository) CacheScope() string { return r.scope() }

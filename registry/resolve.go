package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/imageref"
	"github.com/wharfproject/wharf/registry/hosts"
)

// Resolved is a name resolved on one repository: the top-level document
// exactly as the registry served it, under the digest the registry names
// it by. It is the one path every remote operation takes — remote inspect,
// inspect --raw, /distribution/{name}/json and pull — in the shape of
// go-containerregistry's remote.Get → Descriptor.Image(): FindImage, then
// Image(platform) for the manifest, config and layers.
type Resolved struct {
	TopLevel

	repo *Repository
	doc  *decoded
	v1   *RemoteImage // the answer, when it came from a v1 registry
}

// Repository is the client of the repository that answered (pull fetches
// the layers through it).
func (r *Resolved) Repository() *Repository { return r.repo }

// V1 says the answer came from a v1 registry or a schema1 manifest: no
// referrers, no signatures.
func (r *Resolved) V1() bool { return r.v1 != nil }

// Ref is the repository with the tag or digest that was resolved.
func (r *Resolved) Ref() reference.Named {
	if r.Tag != "" {
		if t, err := reference.WithTag(r.Name, r.Tag); err == nil {
			return t
		}
	}
	if c, err := reference.WithDigest(r.Name, r.Descriptor.Digest); err == nil {
		return c
	}
	return r.Name
}

// FindImage finds ref, NAME[:TAG|@DIGEST] as the user typed it. A short name is
// searched through the candidates (AddRegistries in order, then docker.io);
// only "not found" moves on to the next candidate — a registry that refuses
// the credentials, is down or answers garbage is the answer, so a private
// registry first in the list is never silently replaced by a public one
// holding the same name (name squatting). A name without tag or digest means
// "latest", and, when the repository has no "latest", its first listed tag.
//
// Credentials are bound to one registry: their ServerAddress, or — when it
// is empty, as the Docker Go SDK sends them — the first candidate (the
// registry a fully qualified name names; for a short name, the first
// registry searched). No other registry ever receives them. Credentials
// keyed by registry (X-Registry-Config) give each candidate its own set.
// The answer carries the repository it was read through, bound once: what
// reads more about the image uses it (RemoteImage.Repository).
func (s *Service) FindImage(ctx context.Context, ref imageref.Ref, creds Credentials) (*Resolved, error) {
	var res *Resolved
	err := s.searchCandidates(ref, creds, func(cfg *hosts.Config, c reference.Named, creds Credentials) error {
		var err error
		res, err = s.resolveName(ctx, cfg, c, creds)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// searchCandidates is the one short-name policy: try runs on each candidate
// of ref in order until one succeeds. One set of credentials is bound to
// the first candidate, so a later one is asked anonymously; sets keyed by
// registry stay keyed, and each candidate's repository binds the set keyed
// by its own registry (credentials.go). Only "not found" moves on to the
// next candidate (an index without the platform asked for is an answer,
// not a miss); any other error is the answer. The last candidate's "not
// found" is returned when none has it. The configuration is read once for
// the whole search: a reload in the middle cannot mix two.
func (s *Service) searchCandidates(ref imageref.Ref, creds Credentials, try func(cfg *hosts.Config, c reference.Named, creds Credentials) error) error {
	cfg := s.config()
	cands, err := candidates(cfg, ref)
	if err != nil {
		return err
	}
	if creds.Registries == nil {
		creds = creds.bound(hosts.NormaliseIndexName(reference.Domain(cands[0])))
	}
	var lastErr error
	for _, c := range cands {
		err := try(cfg, c, creds)
		if err == nil {
			return nil
		}
		lastErr = err
		if !errdefs.IsNotFound(err) || errors.Is(err, ErrNoMatchingPlatform) {
			return err
		}
	}
	return lastErr
}

// resolveName resolves one fully qualified candidate.
func (s *Service) resolveName(ctx context.Context, cfg *hosts.Config, name reference.Named, creds Credentials) (*Resolved, error) {
	repo, err := s.repository(ctx, cfg, name, creds)
	if err != nil {
		return nil, err
	}
	var tag string
	var dgst digest.Digest
	if t, ok := name.(reference.Tagged); ok {
		tag = t.Tag()
	}
	if c, ok := name.(reference.Canonical); ok {
		dgst = c.Digest()
	}
	implicit := tag == "" && dgst == ""
	if implicit {
		tag = "latest"
	}
	res, err := repo.fetchTopOf(ctx, tag, dgst)
	if err != nil && implicit && errdefs.IsNotFound(err) {
		if tags, terr := repo.Tags(ctx, TagsOptions{Limit: 1}); terr == nil && len(tags) > 0 && tags[0] != "latest" {
			res, err = repo.fetchTopOf(ctx, tags[0], "")
		}
	}
	if err != nil && errdefs.IsNotFound(err) {
		if repo.hasNoV2(ctx) {
			img, verr := repo.inspectV1(ctx, tag, dgst, implicit)
			if verr != nil {
				return nil, verr
			}
			return &Resolved{TopLevel: img.TopLevel, repo: repo, v1: img}, nil
		}
		return nil, notFoundError(name, tag, dgst, err)
	}
	return res, err
}

// FetchTop fetches the top-level document a tag or digest names on this repository (pull -a walks the
// tags it listed).
func (r *Repository) FetchTop(ctx context.Context, tagOrDigest string) (*Resolved, error) {
	tag, dgst, err := parseRef(tagOrDigest)
	if err != nil {
		return nil, err
	}
	return r.fetchTopOf(ctx, tag, dgst)
}

// fetchTopOf fetches the top-level document of tag or dgst:
//   - a digest: from the content cache when this repository and identity
//     have read it (0 requests), after one HEAD when another has (1), else
//     one GET;
//   - a tag on a repository this identity has read: HEAD, then the body
//     from the cache when unchanged (1 request);
//   - a tag otherwise: one GET (digest and body in one trip).
func (r *Repository) fetchTopOf(ctx context.Context, tag string, dgst digest.Digest) (*Resolved, error) {
	var (
		top    ocispec.Descriptor
		raw    []byte
		served string
		err    error
	)
	asked := r.svc.tags.now()
	switch {
	case dgst != "":
		top = ocispec.Descriptor{Digest: dgst}
		raw, served, err = r.fetchManifest(ctx, top)
		top.Size = int64(len(raw))
	case r.svc.tagWarm(r.scope()): // warm.has, counted (metrics.go)
		top, err = r.Descriptor(ctx, tag)
		if err == nil {
			raw, served, err = r.fetchManifest(ctx, top)
		}
	default:
		err = r.resolveEach(ctx, func(ep *repoEndpoint) error {
			d, b, err := r.getManifest(ctx, ep, tag, "")
			top, raw, served = d, b, d.MediaType
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	doc, err := r.svc.content.decode(r.upstream.host, top.Digest, served, raw)
	if err != nil {
		return nil, err
	}
	top.MediaType = doc.mediaType
	top.Size = int64(len(raw))
	if dgst == "" {
		r.noteTag(tag, top, asked)
	}
	res := &Resolved{
		TopLevel: TopLevel{
			Registry:   r.info.Index.Name,
			Name:       r.info.Name,
			Tag:        tag,
			Descriptor: top,
			Raw:        raw,
			ServedBy:   r.servedBy(),
		},
		repo: r,
		doc:  doc,
	}
	if doc.kind == kindIndex {
		idx := doc.index
		res.Index = &idx
		// The registry keeps an index's manifests in the repository that
		// holds the index: reading the index authorizes them for this scope.
		for _, m := range idx.Manifests {
			r.svc.content.authorize(m.Digest, r.scope())
		}
	}
	return res, nil
}

// PlatformManifest is the manifest of the top level for platform p: the top
// level itself when it is a manifest, else the index entry
// imagespec.SelectManifest chooses (ErrNoMatchingPlatform when none). Its bytes are verified.
func (r *Resolved) PlatformManifest(ctx context.Context, p ocispec.Platform) (ocispec.Descriptor, []byte, error) {
	c, err := r.Choose(ctx, p)
	return c.Descriptor, c.Raw, err
}

// Choice is the platform manifest chosen for one platform, with its
// verified bytes: what a policy judges and a pull then reads (ImageOf), so
// the manifest is chosen and fetched once.
type Choice struct {
	Descriptor ocispec.Descriptor
	Raw        []byte
}

// Choose is PlatformManifest as a Choice.
func (r *Resolved) Choose(ctx context.Context, p ocispec.Platform) (Choice, error) {
	if r.v1 != nil {
		return Choice{Descriptor: r.v1.Manifest, Raw: r.v1.ManifestBytes}, nil
	}
	if r.doc.kind != kindIndex {
		return Choice{Descriptor: r.Descriptor, Raw: r.Raw}, nil
	}
	chosen, err := imagespec.SelectManifest(r.Index, p)
	if err != nil {
		return Choice{}, err
	}
	b, mt, err := r.repo.fetchManifest(ctx, chosen)
	if err != nil {
		return Choice{}, err
	}
	if mt == "" {
		mt = chosen.MediaType
	}
	md, err := r.repo.svc.content.decode(r.repo.upstream.host, chosen.Digest, mt, b)
	if err != nil {
		return Choice{}, err
	}
	if md.kind == kindIndex {
		return Choice{}, invalidDocument(r.repo.upstream.host, "index entry %s is itself an index", chosen.Digest)
	}
	if chosen.MediaType == "" {
		chosen.MediaType = md.mediaType
	}
	return Choice{Descriptor: chosen, Raw: b}, nil
}

// Image is the image for platform p: the platform manifest (parsed), its
// config (verified) and layers. A schema1 manifest or a v1 registry gives
// the v1Compatibility record as config (V1 set).
func (r *Resolved) Image(ctx context.Context, p ocispec.Platform) (*RemoteImage, error) {
	return r.image(ctx, p, nil)
}

// image is Image telling onManifest (when set) of the platform manifest
// before the config is read.
func (r *Resolved) image(ctx context.Context, p ocispec.Platform, onManifest func(*Repository, ocispec.Descriptor, *ocispec.Manifest)) (*RemoteImage, error) {
	if r.v1 != nil {
		return r.ImageOf(ctx, Choice{})
	}
	c, err := r.Choose(ctx, p)
	if err != nil {
		return nil, err
	}
	return r.imageOf(ctx, c, onManifest)
}

// ImageOf is Image for the platform manifest c that Choose chose on r:
// nothing is chosen or fetched again; the config is read.
func (r *Resolved) ImageOf(ctx context.Context, c Choice) (*RemoteImage, error) {
	return r.imageOf(ctx, c, nil)
}

func (r *Resolved) imageOf(ctx context.Context, c Choice, onManifest func(*Repository, ocispec.Descriptor, *ocispec.Manifest)) (*RemoteImage, error) {
	if r.v1 != nil {
		img := *r.v1
		img.repo = r.repo
		return &img, nil
	}
	img := &RemoteImage{TopLevel: r.TopLevel, repo: r.repo}
	mdesc, mraw := c.Descriptor, c.Raw
	mdoc := r.doc
	if mdesc.Digest != r.Descriptor.Digest {
		// Decoded as the index entry's type: the cache keeps it beside the
		// served type's form (doccache.go).
		var err error
		if mdoc, err = r.repo.svc.content.decode(r.repo.upstream.host, mdesc.Digest, mdesc.MediaType, mraw); err != nil {
			return nil, err
		}
	}
	img.Manifest = mdesc
	img.ManifestBytes = mraw
	switch mdoc.kind {
	case kindSchema1:
		img.V1 = true
		img.ConfigBytes = mdoc.v1Config
		img.Config = ocispec.Descriptor{MediaType: imagespec.MediaTypeDockerConfig, Digest: digest.FromBytes(mdoc.v1Config), Size: int64(len(mdoc.v1Config))}
		img.Layers = mdoc.v1Layers
	default:
		m := mdoc.manifest
		img.Parsed = &m
		img.Layers = m.Layers
		img.Annotations = m.Annotations
		img.Config = m.Config
		// The manifest was read in this scope, and a registry keeps a
		// manifest's config in its repository: no HEAD needed to serve a
		// cached config here.
		r.repo.svc.content.authorize(m.Config.Digest, r.repo.scope())
		if onManifest != nil {
			onManifest(r.repo, mdesc, &m)
		}
		cfg, err := r.repo.FetchConfig(ctx, m.Config)
		if err != nil {
			return nil, err
		}
		img.ConfigBytes = cfg
	}
	return img, nil
}

// ListTags lists the tags of a repository named as the user typed it,
// searching the candidates as FindImage does (docker pull --all-tags, wharf
// tags). It returns the repository that answered. A tag or digest in ref
// is ignored: the repository is listed.
func (s *Service) ListTags(ctx context.Context, ref imageref.Ref, creds Credentials, opts TagsOptions) (*Repository, []string, error) {
	ref = ref.Repo()
	var (
		repo *Repository
		tags []string
	)
	err := s.searchCandidates(ref, creds, func(cfg *hosts.Config, c reference.Named, creds Credentials) error {
		r, err := s.repository(ctx, cfg, reference.TrimNamed(c), creds)
		if err != nil {
			return err
		}
		t, err := r.Tags(ctx, opts)
		if err != nil {
			return err
		}
		if len(t) == 0 {
			return fmt.Errorf("repository %s has no tags%.0w", ref, errdefs.ErrNotFound)
		}
		repo, tags = r, t
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return repo, tags, nil
}

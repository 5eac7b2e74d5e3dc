package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// inspectTimeout bounds one shared remote inspect: it runs detached from the
// first caller's context (others may be waiting on the same flight), so it
// needs its own limit. Each caller still returns when its own context ends.
const inspectTimeout = 2 * time.Minute

// Inspect answers a remote inspect.
//
// Policy: a name without tag or digest tries "latest", then the first tag
// listed. A tag is resolved with GET by tag when this repository has nothing
// cached (one trip gives digest and body: challenge, token, manifest,
// config = 4 trips cold) and with HEAD when it has (an unchanged tag is then
// 1 trip, everything else comes from the content cache). The tag→digest
// answer itself is never cached. A digest reference whose manifest and
// config are cached costs no request: the digest pins the content. An index
// is resolved to one platform locally. v1 is tried only when the endpoint
// has no v2 API. Concurrent identical requests share one flight.
func (s *Service) Inspect(ctx context.Context, req InspectRequest) (*RemoteImage, error) {
	key := strings.Join([]string{
		req.Name,
		formatPlatform(normalisePlatform(req.Platform)),
		credentialIdentity(req.Credentials.Auth),
		metaKey(req.Credentials.MetaHeaders),
	}, "\x00")
	ch := s.flight.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), inspectTimeout)
		defer cancel()
		return s.inspect(fctx, req)
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		img := *res.Val.(*RemoteImage) // callers share byte slices: read-only
		return &img, nil
	}
}

func metaKey(h http.Header) string {
	if len(h) == 0 {
		return ""
	}
	var parts []string
	for k, v := range h {
		parts = append(parts, k+"="+strings.Join(v, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, "\x01")
}

func (s *Service) inspect(ctx context.Context, req InspectRequest) (*RemoteImage, error) {
	cands, err := s.Candidates(req.Name)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, c := range cands {
		img, err := s.inspectName(ctx, c, req)
		if err == nil {
			s.log.WithField("registry", img.Registry).Debugf("Inspecting image %s", describeImage(img))
			return img, nil
		}
		lastErr = err
		// Only "not here" moves on to the next registry: a registry that is
		// down must not make a short name silently resolve elsewhere.
		if (!errdefs.IsNotFound(err) && !errdefs.IsUnauthorized(err)) || errors.Is(err, errNoMatchingPlatform) {
			return nil, err
		}
	}
	return nil, lastErr
}

func (s *Service) inspectName(ctx context.Context, name reference.Named, req InspectRequest) (*RemoteImage, error) {
	repo, err := s.Repository(ctx, name, req.Credentials)
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
	img, err := repo.inspectRef(ctx, tag, dgst, req.Platform)
	if err != nil && implicit && errdefs.IsNotFound(err) && !errors.Is(err, errNoMatchingPlatform) {
		if tags, terr := repo.Tags(ctx); terr == nil && len(tags) > 0 && tags[0] != "latest" {
			img, err = repo.inspectRef(ctx, tags[0], "", req.Platform)
		}
	}
	if errors.Is(err, errNoMatchingPlatform) {
		return nil, err
	}
	if err != nil && errdefs.IsNotFound(err) {
		if repo.hasNoV2(ctx) {
			return repo.inspectV1(ctx, tag, dgst, implicit)
		}
		return nil, notFoundError(name, tag, dgst, err)
	}
	return img, err
}

// notFoundError words a missing image like dockerd.
func notFoundError(name reference.Named, tag string, dgst digest.Digest, err error) error {
	ref := reference.FamiliarName(name)
	if dgst != "" {
		ref += "@" + dgst.String()
	} else {
		ref += ":" + tag
	}
	return fmt.Errorf("manifest for %s not found: %w", ref, err)
}

// inspectRef inspects one tag or digest on this repository.
func (r *Repository) inspectRef(ctx context.Context, tag string, dgst digest.Digest, platform ocispec.Platform) (*RemoteImage, error) {
	var (
		top    ocispec.Descriptor
		raw    []byte
		served string
		err    error
	)
	switch {
	case dgst != "":
		top = ocispec.Descriptor{Digest: dgst}
		raw, served, err = r.fetchManifest(ctx, top)
		top.Size = int64(len(raw))
	case r.svc.warm.has(r.warmKey()):
		top, err = r.Resolve(ctx, tag)
		if err == nil {
			raw, served, err = r.fetchManifest(ctx, top)
		}
	default:
		err = r.readEach(ctx, func(ep *repoEndpoint) error {
			d, b, err := r.getManifest(ctx, ep, tag, "")
			top, raw, served = d, b, d.MediaType
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	host := r.upstream.host
	doc, err := decodeDocument(host, served, raw)
	if err != nil {
		return nil, err
	}
	top.MediaType = doc.mediaType
	top.Size = int64(len(raw))
	img := &RemoteImage{
		Registry:   r.info.Index.Name,
		Name:       r.info.Name,
		Tag:        tag,
		Descriptor: top,
		Raw:        raw,
	}
	mdoc, mraw, mdesc := doc, raw, top
	if doc.kind == kindIndex {
		idx := doc.index
		img.Index = &idx
		chosen, err := SelectManifest(&idx, platform)
		if err != nil {
			return nil, err
		}
		b, mt, err := r.fetchManifest(ctx, chosen)
		if err != nil {
			return nil, err
		}
		if mt == "" {
			mt = chosen.MediaType
		}
		md, err := decodeDocument(host, mt, b)
		if err != nil {
			return nil, err
		}
		if md.kind == kindIndex {
			return nil, invalidDocument(host, "index entry %s is itself an index", chosen.Digest)
		}
		if chosen.MediaType == "" {
			chosen.MediaType = md.mediaType
		}
		mdoc, mraw, mdesc = md, b, chosen
	}
	img.Manifest = mdesc
	img.ManifestBytes = mraw
	switch mdoc.kind {
	case kindSchema1:
		img.V1 = true
		img.ConfigBytes = mdoc.v1Config
		img.Config = ocispec.Descriptor{MediaType: mediaTypeDockerConfig, Digest: digest.FromBytes(mdoc.v1Config), Size: int64(len(mdoc.v1Config))}
		img.Layers = mdoc.v1Layers
	default:
		m := mdoc.manifest
		img.Layers = m.Layers
		img.Annotations = m.Annotations
		img.Config = m.Config
		cfg, err := r.FetchConfig(ctx, m.Config)
		if err != nil {
			return nil, err
		}
		img.ConfigBytes = cfg
	}
	return img, nil
}

// hasNoV2 reports whether the upstream endpoint answers GET /v2/ with 404:
// the only case in which the v1 protocol is tried.
func (r *Repository) hasNoV2(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.upstream.baseURL()+"/v2/", nil)
	if err != nil {
		return false
	}
	r.svc.setUserAgent(req)
	resp, err := r.svc.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	return resp.StatusCode == http.StatusNotFound
}

// describeImage is NAME[:TAG][@DIGEST] of what answered, for the debug log.
func describeImage(img *RemoteImage) string {
	var s string
	if img.Name != nil {
		s = reference.FamiliarName(img.Name)
	}
	if img.Tag != "" {
		s += ":" + img.Tag
	}
	if img.Descriptor.Digest != "" {
		s += "@" + img.Descriptor.Digest.String()
	}
	return s
}

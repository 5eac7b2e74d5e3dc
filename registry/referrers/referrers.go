// Package referrers is what refers to an image — signatures, SBOMs,
// attestations — listed from a repository (the OCI referrers API, its tag
// schema, cosign's tags, an index's attestation manifests), written to one
// (Push, keeping the tag schema for a registry without the API), and the
// signature artifacts among them read one at a time for trust/… to verify
// (Signatures).
//
// It speaks to the repository through Target, which package registry
// implements over the repository's upstream endpoint; below it are
// registry/listing (the Link pagination), registry/transport (scopes,
// error classes), imagespec and trust, never package registry.
package referrers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry/listing"
	"github.com/wharfproject/wharf/registry/transport"
)

// Referrers: what refers to an image — signatures, SBOMs, attestations —
// found four ways, each named in Referrer.Source:
//
//   - SourceAPI: the OCI 1.1 referrers API,
//     GET /v2/<name>/referrers/<digest>[?artifactType=], an index whose
//     entries carry artifactType and annotations; Link pagination, bounded;
//   - SourceTag: the referrers tag schema, the fallback of
//     distribution-spec 1.1 for registries without the API (they answer
//     the API with 404, as distribution v3.1 does): the index tagged
//     <alg>-<hex>;
//   - SourceCosign: cosign's tags <alg>-<hex>.sig, .att and .sbom;
//   - SourceAttestation: buildx attestation manifests inside the
//     image's index (vnd.docker.reference.type=attestation-manifest),
//     attached to the platform manifest their vnd.docker.reference.digest
//     names.
//
// The subjects asked about are the top-level digest (what `cosign sign
// NAME:TAG` signs) and, for a multi-platform image, the platform manifest
// chosen. Per subject: 1 request to the API (or, without it, 1 to the API
// the first time per registry host, then 1 GET of the tag-schema index) and
// 3 GETs of cosign tags, 404 meaning none; sent concurrently. Attestations
// cost nothing: the index was read already.
const (
	SourceAPI         = "referrers-api"
	SourceTag         = "referrers-tag"
	SourceCosign      = "cosign"
	SourceAttestation = "attestation"
)

// Bounds of a referrers listing: 100 pages of at most 4 MiB (a manifest's
// cap), 16 MiB in all, 10,000 referrers per subject — an image with more
// is a registry's accident, not something to print.
const (
	maxReferrerPages = 100
	maxReferrerBytes = 16 << 20
	maxReferrers     = 10_000
	// maxReferrerHosts bounds the memo of hosts without the referrers API.
	maxReferrerHosts = 1024
)

// maxManifestSize is a manifest's cap (registry's, containerd's
// MaxManifestSize): of a referrers page, a listed referrer, a pushed one.
const maxManifestSize = 4 << 20

// Target is the repository referrers are listed in and written to: its
// upstream endpoint (the referrers API and the tag schema are the
// registry's own, never a mirror's), and the repository's verified reads.
type Target interface {
	listing.Target // Host, BaseURL, Path, Do
	// GetManifest GETs ref (a tag) from the endpoint: hashed, checked
	// against the registry's digest, cached by digest.
	GetManifest(ctx context.Context, ref string) (ocispec.Descriptor, []byte, error)
	// PutManifest PUTs content under ref (a tag or its digest), returning
	// the answer's OCI-Subject header.
	PutManifest(ctx context.Context, desc ocispec.Descriptor, content []byte, ref string) (string, error)
	// PushManifest uploads a manifest or index and, when tag is not
	// empty, tags it.
	PushManifest(ctx context.Context, desc ocispec.Descriptor, content []byte, tag string) error
	// FetchManifest and FetchBlob read by digest, verified.
	FetchManifest(ctx context.Context, desc ocispec.Descriptor) ([]byte, error)
	FetchBlob(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error)
	// Cached and Cache are the content cache under the repository's
	// scope (registry and credential identity).
	Cached(d digest.Digest) ([]byte, bool)
	Cache(d digest.Digest, mediaType string, b []byte)
}

// NoAPI remembers the registry hosts that answered the referrers API with
// 404 (or 405, 501): they are asked through the tag schema only, so a
// registry without the API is asked once per daemon. Bounded
// (maxReferrerHosts), the least recently used forgotten; safe for
// concurrent use.
type NoAPI struct{ c *lru.Cache[string, struct{}] }

// NewNoAPI returns an empty memo.
func NewNoAPI() *NoAPI {
	c, err := lru.New[string, struct{}](maxReferrerHosts)
	if err != nil {
		panic(err) // a positive constant
	}
	return &NoAPI{c: c}
}

func (n *NoAPI) add(host string) { n.c.Add(host, struct{}{}) }

func (n *NoAPI) has(host string) bool {
	_, ok := n.c.Get(host)
	return ok
}

// Repo is one repository's referrers: t, with the daemon's memo of the
// hosts without the API.
type Repo struct {
	t     Target
	noAPI *NoAPI
}

// In returns the referrers of the repository t.
func In(t Target, noAPI *NoAPI) Repo { return Repo{t: t, noAPI: noAPI} }

// cosignSuffixes are the tags cosign writes beside <alg>-<hex>.
var cosignSuffixes = []string{".sig", ".att", ".sbom"}

// Options ask for an image's referrers.
type Options struct {
	// ArtifactType keeps only referrers of this artifact type ("" = all);
	// sent to the referrers API as artifactType=, applied here when the
	// registry says (OCI-Filters-Applied) that it did not.
	ArtifactType string
}

// Referrer is one artifact that refers to an image.
type Referrer struct {
	// Subject is the digest it refers to: the top level or the platform manifest.
	Subject digest.Digest
	// Descriptor: digest, media type, artifact type, size, annotations.
	Descriptor ocispec.Descriptor
	// Source says how it was found (Source*).
	Source string
	// Tag is the cosign tag it was found under (SourceCosign).
	Tag string
}

// ForImage lists what refers to an image: to its top level (top) and,
// for a multi-platform image, to the platform manifest chosen (manifest);
// index is the top level when it is an index, whose attestation manifests
// for that platform are listed too. The answer is in a stable order: by
// subject (top level first), then source (API or tag schema, cosign,
// attestation), then as listed.
func (r Repo) ForImage(ctx context.Context, top digest.Digest, index *ocispec.Index, manifest digest.Digest, opts Options) ([]Referrer, error) {
	subjects := []digest.Digest{top}
	if manifest != "" && manifest != top {
		subjects = append(subjects, manifest)
	}
	found := make([][]Referrer, len(subjects))
	g, gctx := errgroup.WithContext(ctx)
	for i, s := range subjects {
		g.Go(func() error {
			refs, err := r.Of(gctx, s, opts)
			found[i] = refs
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []Referrer
	for _, refs := range found {
		out = append(out, refs...)
	}
	if index != nil && manifest != "" {
		for _, d := range index.Manifests {
			if !imagespec.IsAttestation(d) || digest.Digest(d.Annotations[imagespec.AnnotationReferenceDigest]) != manifest {
				continue
			}
			d.Platform = nil // unknown/unknown says nothing
			if matchesArtifactType(d, opts.ArtifactType) {
				out = append(out, Referrer{Subject: manifest, Descriptor: d, Source: SourceAttestation})
			}
		}
	}
	return dedupeReferrers(out), nil
}

// Of lists the referrers of one subject in the repository: the
// API (or the tag schema) and cosign's tags, concurrently.
func (r Repo) Of(ctx context.Context, subject digest.Digest, opts Options) ([]Referrer, error) {
	parts := make([][]Referrer, 1+len(cosignSuffixes))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		refs, err := r.index(gctx, subject, opts)
		parts[0] = refs
		return err
	})
	prefix, ok := TagSchemaTag(subject)
	for i, suffix := range cosignSuffixes {
		if !ok {
			break
		}
		g.Go(func() error {
			ref, found, err := r.cosignReferrer(gctx, subject, prefix+suffix)
			if found && matchesArtifactType(ref.Descriptor, opts.ArtifactType) {
				parts[1+i] = []Referrer{ref}
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []Referrer
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// index asks the referrers API, or — when the registry has none —
// reads the tag-schema index.
func (r Repo) index(ctx context.Context, subject digest.Digest, opts Options) ([]Referrer, error) {
	if !r.noAPI.has(r.t.Host()) {
		refs, err := r.referrersAPI(ctx, subject, opts)
		if !noReferrersAPI(err) {
			return refs, err
		}
		r.noAPI.add(r.t.Host())
	}
	tag, ok := TagSchemaTag(subject)
	if !ok {
		return nil, nil
	}
	desc, body, err := r.t.GetManifest(ctx, tag)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	// Some registries resolve the tag to the subject itself (as oras-go
	// notes): its entries are not referrers, and the schema's document is
	// an OCI index.
	if desc.MediaType != ocispec.MediaTypeImageIndex || desc.Digest == subject {
		return nil, nil
	}
	var idx ocispec.Index
	if err := json.Unmarshal(body, &idx); err != nil {
		return nil, transport.InvalidDocument(r.t.Host(), "referrers index %s: %v", tag, err)
	}
	return referrersFromIndex(r.t.Host(), subject, idx.Manifests, SourceTag, opts.ArtifactType, false)
}

// noReferrersAPI reports whether err is a registry's way of saying it has
// no referrers API: 404 (distribution-spec 1.1: a registry with the API
// never answers it with 404; distribution v3.1 does), or a front end's 405
// or 501 for a route it does not know.
func noReferrersAPI(err error) bool {
	var er *transport.ErrorResponse
	if !errors.As(err, &er) {
		return false
	}
	switch er.StatusCode {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	}
	return false
}

// referrersAPI is GET /v2/<name>/referrers/<digest>, every page. The error
// is classified with the registry's answer in its chain, so that the
// caller can tell a 404 (no API).
func (r Repo) referrersAPI(ctx context.Context, subject digest.Digest, opts Options) ([]Referrer, error) {
	host := r.t.Host()
	u, err := url.Parse(r.t.BaseURL() + "/v2/" + r.t.Path() + "/referrers/" + subject.String())
	if err != nil {
		return nil, err
	}
	if opts.ArtifactType != "" {
		u.RawQuery = url.Values{"artifactType": {opts.ArtifactType}}.Encode()
	}
	b := listing.Bounds{What: "referrers of " + subject.String(), MaxPages: maxReferrerPages, MaxPage: maxManifestSize, MaxTotal: maxReferrerBytes}
	var out []Referrer
	err = listing.Pages(ctx, r.t, u, ocispec.MediaTypeImageIndex, b, func(resp *http.Response, body []byte) error {
		var idx ocispec.Index
		if err := json.Unmarshal(body, &idx); err != nil {
			return transport.InvalidDocument(host, "referrers of %s: %v", subject, err)
		}
		filtered := filtersApplied(resp.Header, "artifactType")
		refs, err := referrersFromIndex(host, subject, idx.Manifests, SourceAPI, opts.ArtifactType, filtered)
		if err != nil {
			return err
		}
		out = append(out, refs...)
		if len(out) > maxReferrers {
			return transport.InvalidDocument(host, "referrers of %s: more than %d", subject, maxReferrers)
		}
		return nil
	})
	return out, err
}

// filtersApplied reports whether the OCI-Filters-Applied header names filter.
func filtersApplied(h http.Header, filter string) bool {
	for _, v := range h.Values("OCI-Filters-Applied") {
		for _, f := range strings.Split(v, ",") {
			if strings.TrimSpace(f) == filter {
				return true
			}
		}
	}
	return false
}

// referrersFromIndex checks the entries of a referrers index (every digest
// valid, sizes within a manifest's cap, a media type given) and keeps those
// of artifactType unless the registry filtered already.
func referrersFromIndex(host string, subject digest.Digest, entries []ocispec.Descriptor, source, artifactType string, filtered bool) ([]Referrer, error) {
	if len(entries) > maxReferrers {
		return nil, transport.InvalidDocument(host, "referrers of %s: more than %d", subject, maxReferrers)
	}
	out := make([]Referrer, 0, len(entries))
	for _, d := range entries {
		if err := d.Digest.Validate(); err != nil {
			return nil, transport.InvalidDocument(host, "referrers of %s: invalid digest %q", subject, d.Digest)
		}
		if d.Size < 0 || d.Size > maxManifestSize {
			return nil, transport.InvalidDocument(host, "referrers of %s: %s has size %d", subject, d.Digest, d.Size)
		}
		if d.MediaType == "" {
			return nil, transport.InvalidDocument(host, "referrers of %s: %s has no media type", subject, d.Digest)
		}
		if !filtered && !matchesArtifactType(d, artifactType) {
			continue
		}
		out = append(out, Referrer{Subject: subject, Descriptor: d, Source: source})
	}
	return out, nil
}

// cosignReferrer reads cosign's tag beside subject; found is false when the
// registry has no such tag.
func (r Repo) cosignReferrer(ctx context.Context, subject digest.Digest, tag string) (Referrer, bool, error) {
	desc, body, err := r.t.GetManifest(ctx, tag)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return Referrer{}, false, nil
		}
		return Referrer{}, false, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return Referrer{}, false, transport.InvalidDocument(r.t.Host(), "cosign tag %s: %v", tag, err)
	}
	desc.ArtifactType = artifactTypeOf(m)
	desc.Annotations = m.Annotations
	return Referrer{Subject: subject, Descriptor: desc, Source: SourceCosign, Tag: tag}, true, nil
}

// artifactTypeOf is a manifest's artifact type as the referrers API
// reports it: artifactType, else the config's media type unless it is the
// empty descriptor's.
func artifactTypeOf(m ocispec.Manifest) string {
	if m.ArtifactType != "" {
		return m.ArtifactType
	}
	if m.Config.MediaType != ocispec.MediaTypeEmptyJSON {
		return m.Config.MediaType
	}
	return ""
}

func matchesArtifactType(d ocispec.Descriptor, want string) bool {
	return want == "" || d.ArtifactType == want
}

// TagSchemaTag is the referrers tag schema's tag for subject: <alg>-<hex>,
// the hex cut at 64 characters (distribution-spec 1.1); ok is false when
// the digest cannot form a tag.
func TagSchemaTag(subject digest.Digest) (string, bool) {
	if subject.Validate() != nil {
		return "", false
	}
	enc := subject.Encoded()
	if len(enc) > 64 {
		enc = enc[:64]
	}
	t := string(subject.Algorithm()) + "-" + enc
	return t, imagespec.ValidTag(t + ".sbom")
}

// dedupeReferrers keeps the first of each (subject, digest): a signature
// pushed both as a referrer and a cosign tag is listed once, under the
// source found first.
func dedupeReferrers(in []Referrer) []Referrer {
	seen := map[string]bool{}
	out := make([]Referrer, 0, len(in))
	for _, r := range in {
		k := r.Subject.String() + " " + r.Descriptor.Digest.String()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	return out
}

package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/internal/ctxio"
	"github.com/wharfproject/wharf/registry/blobs"
	"github.com/wharfproject/wharf/registry/transport"
)

// Own manifest GET/HEAD, not a library's manifest store, because oras-go's
// (the one wharf used before) cannot meet these targets:
//   - Resolve fails when HEAD has no Docker-Content-Digest or answers 405
//     (no GET fallback);
//   - FetchReference trusts Docker-Content-Digest without hashing the body,
//     does not cap the body it returns, and issues an extra HEAD when the
//     response is chunked (it breaks the round-trip budget);
//   - Fetch requires Content-Type to equal the descriptor's media type and
//     does not verify the body, so a schema1 or mislabelled manifest fails
//     and a lying registry is believed.
// Auth and tokens go through transport.Client; retries and redirects
// through the transport.Stack below it.

// Size caps. containerd caps manifests at 4 MiB (its MaxManifestSize): a
// manifest with 1000 layers is ~200 KiB, so 4 MiB is generous; configs carry
// history and labels and are capped at 8 MiB for the same reason.
const (
	maxManifestSize = 4 << 20
	maxConfigSize   = 8 << 20
)

// manifestAccept lists what we accept, preferred first.
var manifestAccept = strings.Join(imagespec.ManifestMediaTypes, ", ")

func (r *Repository) manifestURL(ep *repoEndpoint, ref string) string {
	return ep.baseURL() + "/v2/" + r.path + "/manifests/" + ref
}

func (r *Repository) newManifestRequest(ctx context.Context, ep *repoEndpoint, method, ref string) (*http.Request, error) {
	ctx = transport.WithRepositoryScope(ctx, ep.host, r.path, transport.ActionPull)
	req, err := http.NewRequestWithContext(ctx, method, r.manifestURL(ep, ref), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", manifestAccept)
	return req, nil
}

// headManifest resolves ref with HEAD. ok is false when the registry does
// not answer HEAD usefully (405, or no Docker-Content-Digest): GET instead.
func (r *Repository) headManifest(ctx context.Context, ep *repoEndpoint, ref string) (ocispec.Descriptor, bool, error) {
	req, err := r.newManifestRequest(ctx, ep, http.MethodHead, ref)
	if err != nil {
		return ocispec.Descriptor{}, false, err
	}
	resp, err := ep.client.Do(req)
	if err != nil {
		return ocispec.Descriptor{}, false, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return ocispec.Descriptor{}, false, nil
	case http.StatusNotFound:
		// A HEAD answer has no body; word it as the GET would have been.
		return ocispec.Descriptor{}, false, transport.StatusError(http.MethodHead, resp, []byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`), ep.host)
	default:
		return ocispec.Descriptor{}, false, transport.StatusError(http.MethodHead, resp, nil, ep.host)
	}
	h := resp.Header.Get("Docker-Content-Digest")
	if h == "" {
		return ocispec.Descriptor{}, false, nil
	}
	d, err := digest.Parse(h)
	if err != nil {
		return ocispec.Descriptor{}, false, invalidDocument(ep.host, "invalid Docker-Content-Digest %q", h)
	}
	if want, err := digest.Parse(ref); err == nil && want != d {
		return ocispec.Descriptor{}, false, digestMismatch(ep.host, "manifest", want, d)
	}
	size := resp.ContentLength
	if size < 0 || size > maxManifestSize {
		size = 0 // unknown: FetchManifest checks the bytes themselves
	}
	return ocispec.Descriptor{MediaType: contentType(resp.Header), Digest: d, Size: size}, true, nil
}

func contentType(h http.Header) string {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// A manifest whose body breaks — a reset, a body cut short of its
// Content-Length, a stall the body watchdog ends — is asked for again whole
// (a manifest is at most 4 MiB; a blob is resumed instead, registry/blobs),
// at most manifestRereads times, after 250 ms and then 500 ms: the same
// first waits as a blob's reopenings. Only a broken body is read again: an
// answer (a status, a digest mismatch) is not the link's fault, and the
// request itself was already retried by the transport (transport/retry.go).
const manifestRereads = 2

// brokenBody marks a manifest body that broke while being read.
type brokenBody struct{ err error }

func (e *brokenBody) Error() string { return e.err.Error() }
func (e *brokenBody) Unwrap() error { return e.err }

// getManifest GETs ref, reads at most maxManifestSize, hashes the body and
// checks it against Docker-Content-Digest and want (when not empty). The
// verified bytes are cached by digest.
func (r *Repository) getManifest(ctx context.Context, ep *repoEndpoint, ref string, want digest.Digest) (ocispec.Descriptor, []byte, error) {
	for attempt := 0; ; attempt++ {
		desc, body, err := r.getManifestOnce(ctx, ep, ref, want)
		var broken *brokenBody
		if err == nil || attempt >= manifestRereads || !errors.As(err, &broken) || !blobs.LinkBroke(ctx, broken.err) {
			return desc, body, err
		}
		if werr := ctxio.Sleep(ctx, blobs.ReopenBackoff<<attempt); werr != nil {
			return desc, body, err
		}
	}
}

func (r *Repository) getManifestOnce(ctx context.Context, ep *repoEndpoint, ref string, want digest.Digest) (ocispec.Descriptor, []byte, error) {
	req, err := r.newManifestRequest(ctx, ep, http.MethodGet, ref)
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	resp, err := ep.client.Do(req)
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return ocispec.Descriptor{}, nil, transport.StatusError(http.MethodGet, resp, body, ep.host)
	}
	if resp.ContentLength > maxManifestSize {
		return ocispec.Descriptor{}, nil, invalidDocument(ep.host, "manifest %s is larger than %d bytes", ref, maxManifestSize)
	}
	// The body is under the slow-body rule (transport/timeouts.go).
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestSize+1))
	if err != nil {
		return ocispec.Descriptor{}, nil, fmt.Errorf("reading manifest %s: %w", ref, &brokenBody{err})
	}
	if len(body) > maxManifestSize {
		return ocispec.Descriptor{}, nil, invalidDocument(ep.host, "manifest %s is larger than %d bytes", ref, maxManifestSize)
	}
	served := contentType(resp.Header)
	var header digest.Digest
	if h := resp.Header.Get("Docker-Content-Digest"); h != "" {
		if header, err = digest.Parse(h); err != nil {
			return ocispec.Descriptor{}, nil, invalidDocument(ep.host, "invalid Docker-Content-Digest %q", h)
		}
	}
	alg := digest.Canonical
	switch {
	case want != "":
		alg = want.Algorithm()
	case header != "":
		alg = header.Algorithm()
	}
	if !alg.Available() {
		return ocispec.Descriptor{}, nil, invalidDocument(ep.host, "unsupported digest algorithm %q", alg)
	}
	got := manifestDigest(alg, served, body)
	if header != "" && header != got {
		return ocispec.Descriptor{}, nil, fmt.Errorf("Docker-Content-Digest disagrees with the body: %w", digestMismatch(ep.host, "manifest", header, got))
	}
	if want != "" && want != got {
		return ocispec.Descriptor{}, nil, digestMismatch(ep.host, "manifest", want, got)
	}
	// Refuse a document that contradicts itself or its Content-Type, or
	// names an invalid digest, before it is cached or handed to a pull:
	// every caller then sees only documents inspect would accept.
	if _, err := decodeDocument(ep.host, served, body); err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	mt := served
	if !imagespec.IsKnownManifest(mt) {
		mt = imagespec.Sniff(body)
	}
	r.svc.content.put(got, mt, body, r.scope())
	r.svc.warm.add(r.scope())
	return ocispec.Descriptor{MediaType: mt, Digest: got, Size: int64(len(body))}, body, nil
}

// manifestDigest is the digest a registry names a manifest by: the bytes,
// except for signed schema1, whose digest covers the payload without the
// JWS signatures.
func manifestDigest(alg digest.Algorithm, served string, body []byte) digest.Digest {
	if served == imagespec.MediaTypeDockerSchema1JWS || !imagespec.IsKnownManifest(served) {
		if p, ok := imagespec.Schema1Payload(body); ok {
			return alg.FromBytes(p)
		}
	}
	return alg.FromBytes(body)
}

// FetchManifest returns the manifest bytes for desc, verified against
// desc.Digest, capped at 4 MiB, cached by digest.
func (r *Repository) FetchManifest(ctx context.Context, desc ocispec.Descriptor) ([]byte, error) {
	b, _, err := r.fetchManifest(ctx, desc)
	return b, err
}

// fetchManifest also returns the media type the manifest was served with.
func (r *Repository) fetchManifest(ctx context.Context, desc ocispec.Descriptor) ([]byte, string, error) {
	if err := validateDescriptor(desc); err != nil {
		return nil, "", err
	}
	if desc.Size > maxManifestSize {
		return nil, "", invalidDocument(r.upstream.host, "manifest %s is larger than %d bytes", desc.Digest, maxManifestSize)
	}
	body, mt, ok, authorized := r.svc.content.get(desc.Digest, r.scope())
	switch {
	case !ok:
		var err error
		if body, mt, err = r.fetchManifestRemote(ctx, desc); err != nil {
			return nil, "", err
		}
	case !authorized:
		// Cached from another repository, registry or identity: this one
		// may only have it after the registry says so (one HEAD by digest).
		if err := r.readEach(ctx, func(ep *repoEndpoint) error {
			_, _, err := r.headManifest(ctx, ep, desc.Digest.String())
			return err
		}); err != nil {
			return nil, "", err
		}
		r.svc.content.authorize(desc.Digest, r.scope())
	}
	// The descriptor that led here (an index entry) must agree with what
	// the document is: an "image manifest" entry that is an index is
	// refused, whether the bytes came from the network or the cache.
	if imagespec.IsKnownManifest(desc.MediaType) {
		if _, err := r.svc.content.decode(r.upstream.host, desc.Digest, desc.MediaType, body); err != nil {
			return nil, "", err
		}
	}
	return body, mt, nil
}

func (r *Repository) fetchManifestRemote(ctx context.Context, desc ocispec.Descriptor) ([]byte, string, error) {
	var body []byte
	var mt string
	err := r.readEach(ctx, func(ep *repoEndpoint) error {
		d, b, err := r.getManifest(ctx, ep, desc.Digest.String(), desc.Digest)
		if err != nil {
			return err
		}
		if desc.Size > 0 && d.Size != desc.Size && !imagespec.IsSchema1(d.MediaType) {
			return invalidDocument(ep.host, "manifest %s is %d bytes, descriptor says %d", desc.Digest, d.Size, desc.Size)
		}
		body, mt = b, d.MediaType
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return body, mt, nil
}

// FetchConfig returns a config blob, verified, capped at 8 MiB, cached by digest.
func (r *Repository) FetchConfig(ctx context.Context, desc ocispec.Descriptor) ([]byte, error) {
	if err := validateDescriptor(desc); err != nil {
		return nil, err
	}
	if desc.Size > maxConfigSize {
		return nil, invalidDocument(r.upstream.host, "config %s is larger than %d bytes", desc.Digest, maxConfigSize)
	}
	if b, _, ok, authorized := r.svc.content.get(desc.Digest, r.scope()); ok {
		if !authorized {
			if err := r.readEach(ctx, func(ep *repoEndpoint) error {
				_, err := r.headBlob(ctx, ep, desc.Digest)
				return err
			}); err != nil {
				return nil, err
			}
			r.svc.content.authorize(desc.Digest, r.scope())
		}
		return b, nil
	}
	var data []byte
	err := r.readEach(ctx, func(ep *repoEndpoint) error {
		// Resumed where it breaks, like a layer (registry/blobs).
		rc, err := r.openResuming(ctx, ep, desc, 0, true)
		if err != nil {
			return err
		}
		defer rc.Close() // under the slow-body rule (transport/timeouts.go)
		b, err := io.ReadAll(io.LimitReader(newVerifyingReader(rc, desc, ep.host), maxConfigSize+1))
		if err != nil {
			return err
		}
		if err := checkImageConfig(ep.host, desc, b); err != nil {
			return err
		}
		data = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.svc.content.put(desc.Digest, desc.MediaType, data, r.scope())
	return data, nil
}

// checkImageConfig refuses an image config that is not a JSON object of
// the image config's shape, naming the registry, before a pull stores it
// or an inspect builds on it. Configs of other media types (artifacts) are
// passed through as opaque bytes.
func checkImageConfig(host string, desc ocispec.Descriptor, b []byte) error {
	if desc.MediaType != "" && desc.MediaType != ocispec.MediaTypeImageConfig && desc.MediaType != imagespec.MediaTypeDockerConfig {
		return nil
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return invalidDocument(host, "image config %s is not a JSON object", desc.Digest)
	}
	var img ocispec.Image
	if err := json.Unmarshal(b, &img); err != nil {
		return invalidDocument(host, "image config %s: %v", desc.Digest, err)
	}
	return nil
}

// putManifest is PUT /v2/<name>/manifests/<ref>, returning the answer's
// OCI-Subject header. PushManifest is this PUT too: like docker, wharf
// does no client-side referrers indexing when it pushes a manifest.
func (r *Repository) putManifest(ctx context.Context, desc ocispec.Descriptor, content []byte, ref string) (string, error) {
	ep := r.upstream
	ctx = transport.WithRepositoryScope(ctx, ep.host, r.path, transport.ActionPull, transport.ActionPush)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, r.manifestURL(ep, ref), bytes.NewReader(content))
	if err != nil {
		return "", err
	}
	req.ContentLength = int64(len(content))
	req.Header.Set("Content-Type", desc.MediaType)
	resp, err := ep.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, transport.MaxErrorBody))
	if resp.StatusCode != http.StatusCreated {
		return "", transport.StatusError(http.MethodPut, resp, body, ep.host)
	}
	if h := resp.Header.Get("Docker-Content-Digest"); h != "" && h != desc.Digest.String() {
		return "", transport.DigestMismatch(ep.host, "manifest", desc.Digest, digest.Digest(h))
	}
	r.svc.content.put(desc.Digest, desc.MediaType, content, r.scope())
	return resp.Header.Get("OCI-Subject"), nil
}

package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/wharfproject/wharf/trust"
)

// Signatures: the signature artifacts of one subject digest, as bytes for
// trust/… to verify (issue 21). They are found where the signing tools put
// them, with the referrers listing's requests (referrers.go):
//
//   - a Sigstore bundle (cosign 3's default): a referrer whose artifactType
//     is application/vnd.dev.sigstore.bundle…, through the referrers API or
//     its tag-schema index; its one layer is the bundle;
//   - a Notation signature: a referrer of artifactType
//     application/vnd.cncf.notary.signature; its one layer is the JWS or
//     COSE envelope, and the manifest's annotations carry the chain's
//     thumbprints;
//   - a legacy cosign signature: the manifest tagged <alg>-<hex>.sig, one
//     layer per signature, each a simple-signing payload whose layer
//     annotations hold the signature, certificate, chain and Rekor bundle.
//
// Cold, per subject: 1 request to the referrers API (on a registry
// without it, the first time per host, then only) the tag-schema index,
// and beside them 1 GET of the .sig tag (404: none); then per artifact
// found its manifest and its layer (cached by digest). A verdict is cached
// above (graph/distribution/trust.go): a warm inspect sends none of these.
const (
	artifactTypeSigstoreBundle = "application/vnd.dev.sigstore.bundle"
	artifactTypeNotation       = "application/vnd.cncf.notary.signature"
	mediaTypeSimpleSigning     = "application/vnd.dev.cosign.simplesigning.v1+json"
	mediaTypeJWS               = "application/jose+json"
	mediaTypeCOSE              = "application/cose"
)

// Bounds of a signature look-up. A bundle with a full Fulcio chain and a
// Rekor entry is about 10 KiB, a simple-signing payload under 1 KiB and a
// Notation envelope a few KiB: 1 MiB per payload leaves room for long
// chains and refuses a registry that serves a layer as a "signature". 32
// artifacts per subject: each costs two GETs and a verification, and an
// image signed 32 times is already an accident; past it the look-up fails
// rather than keep a prefix a registry chose. 16 signatures per .sig
// manifest, for the same reason.
const (
	maxSignaturePayload   = 1 << 20
	maxSignatureArtifacts = 32
	maxSigLayers          = 16
)

// Signatures fetches the signature artifacts of subject in this
// repository. A registry error fails the look-up (a signature that could
// not be read is not a missing one); an artifact that names another
// subject is returned with that subject, for the policy to refuse.
func (r *Repository) Signatures(ctx context.Context, subject digest.Digest) ([]trust.Artifact, error) {
	var listed []Referrer
	var sig *Referrer
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		refs, err := r.referrersIndex(gctx, subject, ReferrersOptions{})
		listed = refs
		return err
	})
	if prefix, ok := tagSchemaTag(subject); ok {
		g.Go(func() error {
			ref, found, err := r.cosignReferrer(gctx, subject, prefix+".sig")
			if found {
				sig = &ref
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var wanted []Referrer
	for _, ref := range listed {
		switch at := ref.Descriptor.ArtifactType; {
		case strings.HasPrefix(at, artifactTypeSigstoreBundle) || at == artifactTypeNotation:
			wanted = append(wanted, ref)
		case at == "" || at == ocispec.MediaTypeEmptyJSON:
			// A registry that lists a referrer by its config's media
			// type (go-containerregistry's, v0.22: the empty
			// descriptor's for cosign's bundle) hides the manifest's own
			// artifactType: the manifest says what it is
			// (signatureArtifacts), within the same cap.
			wanted = append(wanted, ref)
		}
	}
	if sig != nil {
		wanted = append(wanted, *sig)
	}
	if len(wanted) > maxSignatureArtifacts {
		return nil, invalidDocument(r.upstream.host, "signatures of %s: more than %d", subject, maxSignatureArtifacts)
	}
	found := make([][]trust.Artifact, len(wanted))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(4) // as many as a pull's manifest fetches
	for i, ref := range wanted {
		g.Go(func() error {
			arts, err := r.signatureArtifacts(gctx, ref)
			found[i] = arts
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []trust.Artifact
	for _, arts := range found {
		out = append(out, arts...)
	}
	return out, nil
}

// signatureArtifacts reads one signature manifest and its payloads.
func (r *Repository) signatureArtifacts(ctx context.Context, ref Referrer) ([]trust.Artifact, error) {
	desc := ref.Descriptor
	if desc.MediaType == "" {
		desc.MediaType = ocispec.MediaTypeImageManifest
	}
	body, err := r.FetchManifest(ctx, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, invalidDocument(r.upstream.host, "signature %s: %v", desc.Digest, err)
	}
	// A referrer names its subject; a .sig tag's subject is its name.
	subject := ref.Subject
	if ref.Source != ReferrerSourceCosign {
		subject = ""
		if m.Subject != nil {
			subject = m.Subject.Digest
		}
	}
	// The manifest's own artifactType decides, not the listing's: a
	// registry may list it by another (Signatures).
	at := m.ArtifactType
	if at == "" {
		at = ref.Descriptor.ArtifactType
	}
	var format trust.Format
	switch {
	case ref.Source == ReferrerSourceCosign:
		format = trust.FormatSimpleSigning
	case at == artifactTypeNotation:
		format = trust.FormatNotation
	case strings.HasPrefix(at, artifactTypeSigstoreBundle):
		format = trust.FormatSigstoreBundle
	default:
		return nil, nil // an SBOM, an attestation: not a signature
	}
	if len(m.Layers) > maxSigLayers {
		return nil, invalidDocument(r.upstream.host, "signature %s: %d layers, more than %d", desc.Digest, len(m.Layers), maxSigLayers)
	}
	var out []trust.Artifact
	for i, l := range m.Layers {
		if !signatureLayer(format, l.MediaType) {
			continue
		}
		payload, err := r.fetchSignaturePayload(ctx, l)
		if err != nil {
			return nil, err
		}
		ann := l.Annotations
		if format == trust.FormatNotation {
			ann = m.Annotations // the chain's thumbprints, the signing time
		}
		out = append(out, trust.Artifact{Format: format, Digest: desc.Digest, Layer: i, Subject: subject, MediaType: l.MediaType, Payload: payload, Annotations: ann})
	}
	return out, nil
}

func signatureLayer(f trust.Format, mediaType string) bool {
	switch f {
	case trust.FormatSimpleSigning:
		return mediaType == mediaTypeSimpleSigning
	case trust.FormatNotation:
		return mediaType == mediaTypeJWS || mediaType == mediaTypeCOSE
	}
	return strings.HasPrefix(mediaType, artifactTypeSigstoreBundle)
}

// fetchSignaturePayload reads one layer of a signature manifest, capped
// and verified.
func (r *Repository) fetchSignaturePayload(ctx context.Context, l ocispec.Descriptor) ([]byte, error) {
	if l.Size < 0 || l.Size > maxSignaturePayload {
		return nil, invalidDocument(r.upstream.host, "signature payload %s is %d bytes, more than %d", l.Digest, l.Size, maxSignaturePayload)
	}
	if b, _, ok, authorized := r.svc.content.get(l.Digest, r.scope()); ok && authorized {
		return b, nil
	}
	rc, err := r.FetchBlob(ctx, l)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxSignaturePayload+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSignaturePayload {
		return nil, fmt.Errorf("signature payload %s is larger than %d bytes%.0w", l.Digest, maxSignaturePayload, errdefs.ErrInvalidArgument)
	}
	r.svc.content.put(l.Digest, l.MediaType, b, r.scope())
	return b, nil
}

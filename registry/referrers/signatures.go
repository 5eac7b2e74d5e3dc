package referrers

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

	"github.com/wharfproject/wharf/registry/transport"
	"github.com/wharfproject/wharf/trust"
)

// Signatures: the signature artifacts of one subject digest, as bytes for
// trust/… to verify. They are found where the signing tools put
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
// and beside them 1 GET of the .sig tag (404: none); then, one at a time
// as the policy asks (SignatureSet.Each), per artifact its manifest and
// per signature its layer (cached by digest). A verdict is cached above
// (graph/distribution/trust.go): a warm inspect sends none of these.
const (
	ArtifactTypeSigstoreBundle = "application/vnd.dev.sigstore.bundle"
	artifactTypeNotation       = "application/vnd.cncf.notary.signature"
	mediaTypeSimpleSigning     = "application/vnd.dev.cosign.simplesigning.v1+json"
	mediaTypeJWS               = "application/jose+json"
	mediaTypeCOSE              = "application/cose"
)

// Bounds of a signature look-up. A bundle with a full Fulcio chain and a
// Rekor entry is about 10 KiB, a simple-signing payload under 1 KiB and a
// Notation envelope a few KiB: 1 MiB per payload leaves room for long
// chains and refuses a registry that serves a layer as a "signature". 32
// artifacts listed per subject: an image signed 32 times is already an
// accident; past it the look-up fails rather than keep a prefix a
// registry chose. 16 signatures per .sig manifest, for the same reason.
//
// Each signature costs a GET and a verification, so a walk of one
// subject's signatures (SignatureSet.Each) stops at 32 signatures and at
// 4 MiB of payloads, whichever comes first: 32 listed artifacts of 16
// layers of 1 MiB would otherwise be 512 GETs, 512 MiB and 512
// verifications for one inspect. 32 signatures hold every key, tool and
// format an image is plausibly signed with; 4 MiB is 32 generous bundles
// (128 KiB each, ten times a real one) or four payloads at the 1 MiB cap.
const (
	MaxSignaturePayload   = 1 << 20
	maxSignatureArtifacts = 32
	maxSigLayers          = 16
	MaxSignatures         = 32
	MaxSignatureBytes     = 4 << 20
)

// SignatureSet is the signature artifacts listed for one subject, not yet
// read: Each reads them one at a time, so that a look-up holds one payload
// at once and stops when the policy has what it needs (a trust.Source).
type SignatureSet struct {
	r       Repo
	subject digest.Digest
	wanted  []Referrer // one per manifest digest, in the listing's order
}

// Len is the number of signature manifests listed.
func (s *SignatureSet) Len() int { return len(s.wanted) }

// Signatures lists the signature artifacts of subject in the repository.
// A registry error fails the look-up (a signature that could not be read
// is not a missing one); an artifact that names another subject is
// returned with that subject, for the policy to refuse.
func (r Repo) Signatures(ctx context.Context, subject digest.Digest) (*SignatureSet, error) {
	var listed []Referrer
	var sig *Referrer
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		refs, err := r.index(gctx, subject, Options{})
		listed = refs
		return err
	})
	if prefix, ok := TagSchemaTag(subject); ok {
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
	set := &SignatureSet{r: r, subject: subject}
	seen := map[digest.Digest]bool{}
	add := func(ref Referrer) {
		// A manifest listed twice is read and verified once.
		if seen[ref.Descriptor.Digest] {
			return
		}
		seen[ref.Descriptor.Digest] = true
		set.wanted = append(set.wanted, ref)
	}
	for _, ref := range listed {
		switch at := ref.Descriptor.ArtifactType; {
		case strings.HasPrefix(at, ArtifactTypeSigstoreBundle) || at == artifactTypeNotation:
			add(ref)
		case at == "" || at == ocispec.MediaTypeEmptyJSON:
			// A registry that lists a referrer by its config's media
			// type (go-containerregistry's, v0.22: the empty
			// descriptor's for cosign's bundle) hides the manifest's own
			// artifactType: the manifest says what it is
			// (signatureArtifacts), within the same cap.
			add(ref)
		}
	}
	if sig != nil {
		add(*sig)
	}
	if len(set.wanted) > maxSignatureArtifacts {
		return nil, transport.InvalidDocument(r.t.Host(), "signatures of %s: more than %d", subject, maxSignatureArtifacts)
	}
	return set, nil
}

// Each reads the listed artifacts in turn, manifest then payloads, and
// hands fn one signature at a time, under MaxSignatures and
// MaxSignatureBytes (then trust.ErrSignatureLimit). A bundle whose bytes
// were already handed out is not handed again: it verifies the same way
// (a simple-signing or Notation signature also depends on its manifest,
// so only the manifest's own repetition is dropped, at listing).
func (s *SignatureSet) Each(ctx context.Context, fn func(trust.Artifact) bool) error {
	if s == nil {
		return nil
	}
	n, total := 0, int64(0)
	bundles := map[digest.Digest]bool{}
	for _, ref := range s.wanted {
		sm, err := s.r.signatureManifest(ctx, ref)
		if err != nil {
			return err
		}
		for i, l := range sm.layers {
			if sm.format == trust.FormatSigstoreBundle {
				if bundles[l.Digest] {
					continue
				}
				bundles[l.Digest] = true
			}
			if n == MaxSignatures {
				return fmt.Errorf("signatures of %s: more than %d%.0w", s.subject, MaxSignatures, trust.ErrSignatureLimit)
			}
			if l.Size > MaxSignatureBytes-total {
				return fmt.Errorf("signatures of %s: more than %d bytes%.0w", s.subject, MaxSignatureBytes, trust.ErrSignatureLimit)
			}
			n++
			total += max(l.Size, 0)
			payload, err := s.r.fetchSignaturePayload(ctx, l)
			if err != nil {
				return err
			}
			if !fn(sm.artifact(i, payload)) {
				return nil
			}
		}
	}
	return nil
}

// signatureManifest is one signature manifest as Each walks it: its
// signature layers, and what each artifact built from them shares.
type signatureManifest struct {
	digest   digest.Digest
	format   trust.Format // "": not a signature (an SBOM, an attestation)
	subject  digest.Digest
	layers   []ocispec.Descriptor // the signature layers only
	index    []int                // each one's position among the manifest's layers
	manifest map[string]string    // the manifest's annotations
}

func (sm *signatureManifest) artifact(i int, payload []byte) trust.Artifact {
	l := sm.layers[i]
	ann := l.Annotations
	if sm.format == trust.FormatNotation {
		ann = sm.manifest // the chain's thumbprints, the signing time
	}
	return trust.Artifact{Format: sm.format, Digest: sm.digest, Layer: sm.index[i], Subject: sm.subject,
		MediaType: l.MediaType, Payload: payload, Annotations: ann}
}

// signatureManifest reads one signature manifest (not its payloads).
func (r Repo) signatureManifest(ctx context.Context, ref Referrer) (*signatureManifest, error) {
	desc := ref.Descriptor
	if desc.MediaType == "" {
		desc.MediaType = ocispec.MediaTypeImageManifest
	}
	body, err := r.t.FetchManifest(ctx, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, transport.InvalidDocument(r.t.Host(), "signature %s: %v", desc.Digest, err)
	}
	sm := &signatureManifest{digest: desc.Digest, manifest: m.Annotations}
	// A referrer names its subject; a .sig tag's subject is its name.
	sm.subject = ref.Subject
	if ref.Source != SourceCosign {
		sm.subject = ""
		if m.Subject != nil {
			sm.subject = m.Subject.Digest
		}
	}
	// The manifest's own artifactType decides, not the listing's: a
	// registry may list it by another (Signatures).
	at := m.ArtifactType
	if at == "" {
		at = ref.Descriptor.ArtifactType
	}
	switch {
	case ref.Source == SourceCosign:
		sm.format = trust.FormatSimpleSigning
	case at == artifactTypeNotation:
		sm.format = trust.FormatNotation
	case strings.HasPrefix(at, ArtifactTypeSigstoreBundle):
		sm.format = trust.FormatSigstoreBundle
	default:
		return sm, nil // an SBOM, an attestation: not a signature
	}
	if len(m.Layers) > maxSigLayers {
		return nil, transport.InvalidDocument(r.t.Host(), "signature %s: %d layers, more than %d", desc.Digest, len(m.Layers), maxSigLayers)
	}
	for i, l := range m.Layers {
		if signatureLayer(sm.format, l.MediaType) {
			sm.layers = append(sm.layers, l)
			sm.index = append(sm.index, i)
		}
	}
	return sm, nil
}

func signatureLayer(f trust.Format, mediaType string) bool {
	switch f {
	case trust.FormatSimpleSigning:
		return mediaType == mediaTypeSimpleSigning
	case trust.FormatNotation:
		return mediaType == mediaTypeJWS || mediaType == mediaTypeCOSE
	}
	return strings.HasPrefix(mediaType, ArtifactTypeSigstoreBundle)
}

// fetchSignaturePayload reads one layer of a signature manifest, capped
// and verified.
func (r Repo) fetchSignaturePayload(ctx context.Context, l ocispec.Descriptor) ([]byte, error) {
	if l.Size < 0 || l.Size > MaxSignaturePayload {
		return nil, transport.InvalidDocument(r.t.Host(), "signature payload %s is %d bytes, more than %d", l.Digest, l.Size, MaxSignaturePayload)
	}
	if b, ok := r.t.Cached(l.Digest); ok {
		return b, nil
	}
	rc, err := r.t.FetchBlob(ctx, l)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxSignaturePayload+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSignaturePayload {
		return nil, fmt.Errorf("signature payload %s is larger than %d bytes%.0w", l.Digest, MaxSignaturePayload, errdefs.ErrInvalidArgument)
	}
	r.t.Cache(l.Digest, l.MediaType, b)
	return b, nil
}

package registry

import (
	"context"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/referrers"
)

// What refers to an image is registry/referrers' (the referrers API or its
// tag schema, cosign's tags, attestation manifests; listed within bounds,
// written keeping the tag schema, signatures read one at a time). This
// file hands it the repository's upstream and the daemon's memo of the
// hosts without the API.

// ReferrersOptions ask for an image's referrers.
type ReferrersOptions = referrers.Options

// Referrer is one artifact that refers to an image.
type Referrer = referrers.Referrer

// How a referrer was found (Referrer.Source).
const (
	ReferrerSourceAPI         = referrers.SourceAPI
	ReferrerSourceTag         = referrers.SourceTag
	ReferrerSourceCosign      = referrers.SourceCosign
	ReferrerSourceAttestation = referrers.SourceAttestation
)

// ReferrerIndexing says how the destination came to list a referrer.
type ReferrerIndexing = referrers.Indexing

// How PushReferrer's destination lists the referrer.
const (
	ReferrerIndexedByRegistry = referrers.IndexedByRegistry
	ReferrerIndexedByTag      = referrers.IndexedByTag
	ReferrerNotIndexed        = referrers.NotIndexed
)

// SignatureSet is the signature artifacts listed for one subject, read one
// at a time (a trust.Source).
type SignatureSet = referrers.SignatureSet

// refs is the repository's referrers, asked of its upstream.
func (r *Repository) refs() referrers.Repo {
	return referrers.In(target{r, r.upstream}, r.svc.noReferrersAPI)
}

// Referrers lists what refers to img (an answer of r.Image): to the top
// level and the platform manifest chosen, through the API (or the tag
// schema) and cosign's tags, and the index's attestations for it. A v1
// registry or schema1 image has none.
func (r *Resolved) Referrers(ctx context.Context, img *RemoteImage, opts ReferrersOptions) ([]Referrer, error) {
	if r.v1 != nil {
		return nil, nil
	}
	return r.repo.refs().ForImage(ctx, r.Descriptor.Digest, r.Index, img.Manifest.Digest, opts)
}

// ReferrersOfSubjects lists what refers to each subject in the resolved
// repository through the API (or the tag schema) and cosign's tags
// (referrers.Repo.OfSubjects), for a copy.
func (r *Resolved) ReferrersOfSubjects(ctx context.Context, subjects []digest.Digest) ([]Referrer, error) {
	if r.v1 != nil {
		return nil, nil
	}
	return r.repo.refs().OfSubjects(ctx, subjects)
}

// CheckReferrerSubject refuses a referrer whose manifest does not refer to
// the subject it was listed for (referrers.CheckSubject), naming the
// resolved registry.
func (r *Resolved) CheckReferrerSubject(ref Referrer, subject *ocispec.Descriptor) error {
	return referrers.CheckSubject(r.repo.upstream.host, ref, subject)
}

// PushReferrer writes a referrer's manifest (its blobs must be there) by
// digest, or under tag when given (a cosign tag), and makes the registry
// list it under its subject (referrers.Repo.Push).
func (r *Repository) PushReferrer(ctx context.Context, desc ocispec.Descriptor, content []byte, tag string) (ReferrerIndexing, error) {
	if err := validateDescriptor(desc); err != nil {
		return 0, err
	}
	return r.refs().Push(ctx, desc, content, tag)
}

// Signatures lists the signature artifacts of subject in this repository
// (referrers.Repo.Signatures).
func (r *Repository) Signatures(ctx context.Context, subject digest.Digest) (*SignatureSet, error) {
	return r.refs().Signatures(ctx, subject)
}

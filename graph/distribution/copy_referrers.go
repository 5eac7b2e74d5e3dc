package distribution

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry"
)

// maxReferrerManifestBytes bounds the referrer manifests one copy holds
// until it writes them: 64 MiB, 16 manifests at the 4 MiB cap or some
// 60,000 signatures of 1 KiB, where a listing may name 10,000 referrers of
// up to 4 MiB each per subject.
const maxReferrerManifestBytes = 64 << 20

// referrerSubjects are the digests whose referrers a copy takes along: the
// top level and every platform manifest copied with it. Attestation
// manifests are left out: they are in the index (copied with it) and
// nothing is expected to refer to them. Referrers of referrers are not
// followed (one level, as `oras cp -r` without recursion).
func referrerSubjects(top planManifest, manifests []planManifest, idx *ocispec.Index) []digest.Digest {
	attestation := map[digest.Digest]bool{}
	if idx != nil {
		for _, d := range idx.Manifests {
			if imagespec.IsAttestation(d) {
				attestation[d.Digest] = true
			}
		}
	}
	out := []digest.Digest{top.desc.Digest}
	for _, m := range manifests {
		if m.desc.Digest != top.desc.Digest && !attestation[m.desc.Digest] {
			out = append(out, m.desc.Digest)
		}
	}
	return out
}

// distinctReferrers are refs without repeats, checked before any is
// fetched: each a manifest, not an index (wharf copies referrers that are
// manifests), and all of them within maxReferrerManifestBytes in all (they
// are held in memory until written). Copy and sync's export share it.
func distinctReferrers(refs []registry.Referrer) ([]registry.Referrer, error) {
	var unique []registry.Referrer
	seen := map[digest.Digest]bool{}
	var total int64
	for _, ref := range refs {
		if seen[ref.Descriptor.Digest] {
			continue
		}
		seen[ref.Descriptor.Digest] = true
		if imagespec.IsIndex(ref.Descriptor.MediaType) {
			return nil, fmt.Errorf("referrer %s of %s is an index: wharf copies referrers that are manifests%.0w", ref.Descriptor.Digest, ref.Subject, errdefs.ErrNotImplemented)
		}
		if total += ref.Descriptor.Size; total > maxReferrerManifestBytes {
			return nil, fmt.Errorf("the referrers' manifests are larger than %d bytes in all%.0w", maxReferrerManifestBytes, errdefs.ErrNotImplemented)
		}
		unique = append(unique, ref)
	}
	return unique, nil
}

// copyReferrers copies, after the image, what refers to subjects at SRC:
// every referrer's blobs through TransferBlob (as the image's), then its
// manifest byte for byte (so its digest and its subject stay SRC's), by
// digest and under its cosign tag when it has one; DST lists it under its
// subject through its referrers API or the tag schema
// (registry.PushReferrer). The referrers of one subject are written one
// after another: the tag schema is a read-modify-write of one index.
func (s *Service) copyReferrers(ctx context.Context, res *registry.Resolved, dst *registry.Repository, mountFrom []string, subjects []digest.Digest, includeForeign bool, po *progressOutput, result *types.CopyResult) error {
	refs, err := res.ReferrersOfSubjects(ctx, subjects)
	if err != nil {
		return fmt.Errorf("list referrers: %w", err)
	}
	src := res.Repository()
	unique, err := distinctReferrers(refs)
	if err != nil {
		return err
	}
	order := make([]planManifest, len(unique))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxConcurrentCopies)
	for i, ref := range unique {
		g.Go(func() error {
			b, err := src.FetchManifest(gctx, ref.Descriptor)
			if err != nil {
				return fmt.Errorf("referrer %s of %s: %w", ref.Descriptor.Digest, ref.Subject, err)
			}
			m, err := parseRemoteManifest(ref.Descriptor, b)
			if err != nil {
				return fmt.Errorf("referrer %s of %s: %w", ref.Descriptor.Digest, ref.Subject, err)
			}
			if imagespec.IsIndex(m.desc.MediaType) {
				return fmt.Errorf("referrer %s of %s is an index: wharf copies referrers that are manifests%.0w", ref.Descriptor.Digest, ref.Subject, errdefs.ErrNotImplemented)
			}
			order[i] = m
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	manifests := make(map[digest.Digest]planManifest, len(order))
	for _, m := range order {
		manifests[m.desc.Digest] = m
	}
	// Every (subject, referrer) pair is checked before any referrer's
	// blob moves: one that names another subject would be attached to it
	// at DST. The copy fails rather than skipping it with a warning: the
	// user asked for the referrers, and a source that lies must not make
	// a copy look complete.
	for _, ref := range refs {
		if err := res.CheckReferrerSubject(ref, manifests[ref.Descriptor.Digest].man.Subject); err != nil {
			return err
		}
	}
	if err := po.status("", fmt.Sprintf("Copying %d referrers of %d manifests", len(order), len(subjects))); err != nil {
		return err
	}
	plan := newTransferPlan(planManifest{}, order, includeForeign)
	result.Blobs += len(plan.layers) + len(plan.configs)
	result.Skipped += plan.skipped
	if err := plan.moveBlobs(ctx, copyTransfer(src.OpenBlobAt, dst, mountFrom, po, result)); err != nil {
		return err
	}
	copied := map[digest.Digest]bool{}
	for _, ref := range refs {
		m := manifests[ref.Descriptor.Digest]
		how, err := dst.PushReferrer(ctx, m.desc, m.bytes, ref.Tag)
		if err != nil {
			return fmt.Errorf("referrer %s of %s: %w", m.desc.Digest, ref.Subject, err)
		}
		if !copied[m.desc.Digest] {
			copied[m.desc.Digest] = true
			result.Referrers++
		}
		if err := po.status("", fmt.Sprintf("Referrer %s of %s: %s", m.desc.Digest, ref.Subject, referrerNote(how, ref))); err != nil {
			return err
		}
	}
	return nil
}

func referrerNote(how registry.ReferrerIndexing, ref registry.Referrer) string {
	switch {
	case ref.Tag != "":
		return "copied as tag " + ref.Tag
	case how == registry.ReferrerIndexedByRegistry:
		return "copied, listed by the destination's referrers API"
	case how == registry.ReferrerIndexedByTag:
		return "copied, added to the referrers tag schema's index"
	default:
		return "copied"
	}
}

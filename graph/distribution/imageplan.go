package distribution

import (
	"context"
	"io"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/registry"
	"github.com/wharfproject/wharf/trust"
)

// The one-image plan as graph/mirror moves it: out of a registry into an
// OCI layout (the export), and out of a layout into a registry (the
// import). Both run copy's plan, so that an image crosses the air gap
// with what a copy would write, in copy's order.

// Manifest is one manifest of a plan: its descriptor, its bytes as read,
// and its parsed content.
type Manifest struct {
	Desc     ocispec.Descriptor
	Bytes    []byte
	Manifest ocispec.Manifest
}

func (m planManifest) exported() Manifest {
	return Manifest{Desc: m.desc, Bytes: m.bytes, Manifest: m.man}
}
func (m Manifest) plan() planManifest {
	return planManifest{desc: m.Desc, bytes: m.Bytes, man: m.Manifest}
}

// Plan is one image to write: its top level, every manifest, and their
// distinct blobs.
type Plan struct{ p *transferPlan }

// Top is the manifest or index written last, under the tag.
func (p *Plan) Top() Manifest { return p.p.top.exported() }

// Manifests are every manifest of the plan, the top level among them when
// it is a manifest.
func (p *Plan) Manifests() []Manifest {
	out := make([]Manifest, len(p.p.manifests))
	for i, m := range p.p.manifests {
		out[i] = m.exported()
	}
	return out
}

// Blobs are the distinct layers, then the configs.
func (p *Plan) Blobs() []ocispec.Descriptor {
	return append(append([]ocispec.Descriptor(nil), p.p.layers...), p.p.configs...)
}

// NewPlan lists the distinct blobs of manifests; foreign layers are left
// out unless includeForeign.
func NewPlan(top Manifest, manifests []Manifest, includeForeign bool) *Plan {
	pm := make([]planManifest, len(manifests))
	for i, m := range manifests {
		pm[i] = m.plan()
	}
	return &Plan{newTransferPlan(top.plan(), pm, includeForeign)}
}

// ParseManifest parses b, the manifest desc names (no media type check).
func ParseManifest(desc ocispec.Descriptor, b []byte) (Manifest, error) {
	m, err := parseManifest(desc, b)
	return m.exported(), err
}

// ManifestMediaType is desc's media type, else the one b's content says.
func ManifestMediaType(desc ocispec.Descriptor, b []byte) string { return manifestMediaType(desc, b) }

// MaxPlatformManifests is the most manifests an index a plan holds may list.
const MaxPlatformManifests = maxPlatformManifests

// ImagePlan is what a copy of res would write: the index whole, or with
// platform that platform's manifest alone.
func (s *Service) ImagePlan(ctx context.Context, res *registry.Resolved, platform *ocispec.Platform, includeForeign bool) (*Plan, error) {
	p, err := s.copyPlan(ctx, res, types.CopyOptions{Platform: platform, IncludeForeign: includeForeign})
	if err != nil {
		return nil, err
	}
	return &Plan{p}, nil
}

// PlanReferrers fetches what refers to the plan's subjects, as a copy
// does (manifests only, each checked against its subject, within
// maxReferrerManifestBytes), each with the listing that found it.
func PlanReferrers(ctx context.Context, res *registry.Resolved, plan *Plan) ([]Manifest, []Referrer, error) {
	subjects := referrerSubjects(plan.p.top, plan.p.manifests, res.Index)
	refs, err := res.ReferrersOfSubjects(ctx, subjects)
	if err != nil {
		return nil, nil, err
	}
	unique, err := distinctReferrers(refs)
	if err != nil {
		return nil, nil, err
	}
	var out []Manifest
	var listed []Referrer
	for _, ref := range unique {
		b, err := res.Repository().FetchManifest(ctx, ref.Descriptor)
		if err != nil {
			return nil, nil, err
		}
		m, err := parseRemoteManifest(ref.Descriptor, b)
		if err != nil {
			return nil, nil, err
		}
		if err := res.CheckReferrerSubject(ref, m.man.Subject); err != nil {
			return nil, nil, err
		}
		out = append(out, m.exported())
		listed = append(listed, ref)
	}
	return out, listed, nil
}

// BlobOpener reads a blob from an offset (an upload resumed after a
// broken PATCH).
type BlobOpener func(ctx context.Context, desc ocispec.Descriptor, offset int64) (io.ReadCloser, error)

// PushPlan writes p at dst as a copy does (blobs maxConcurrentCopies at a
// time, read from open; the platform manifests; the top level under tag),
// counting each blob in result.
func PushPlan(ctx context.Context, p *Plan, open BlobOpener, dst *Repository, tag string, result *types.CopyResult) error {
	return p.p.run(ctx, planTransfer(open, dst, result), tag)
}

// PushBlobs makes dst have every blob of p (a referrer's, before its
// manifest), counting each in result.
func PushBlobs(ctx context.Context, p *Plan, open BlobOpener, dst *Repository, result *types.CopyResult) error {
	return p.p.moveBlobs(ctx, planTransfer(open, dst, result))
}

func planTransfer(open BlobOpener, dst *Repository, result *types.CopyResult) transfer {
	return copyTransfer(open, dst, nil, newProgressOutput(nil), result)
}

// ObserveSync counts one image a sync finished with (the metrics).
func (s *Service) ObserveSync(registry, outcome string) { s.syncObserved(registry, outcome) }

// AdmitOCIArchive is the policy's check on an OCI layout archive arriving
// (the oci-archive transport), asked before its first byte is read.
func (s *Service) AdmitOCIArchive(ctx context.Context, op string) error {
	return s.admitArchive(ctx, op, trust.TransportOCIArchive)
}

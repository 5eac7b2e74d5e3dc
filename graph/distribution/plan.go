package distribution

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry"
)

// planManifest is one manifest a transfer writes, with its bytes and its
// parsed content.
type planManifest struct {
	desc  ocispec.Descriptor
	bytes []byte
	man   ocispec.Manifest
}

// manifestMediaType is desc's media type, else the one b's content says.
func manifestMediaType(desc ocispec.Descriptor, b []byte) string {
	if desc.MediaType != "" {
		return desc.MediaType
	}
	return imagespec.Sniff(b)
}

// parseManifest parses b, the manifest desc names, wherever it was read
// (the store for a push, SRC for a copy). The descriptor kept has b's
// size and desc's media type, else the sniffed one.
func parseManifest(desc ocispec.Descriptor, b []byte) (planManifest, error) {
	var man ocispec.Manifest
	if err := json.Unmarshal(b, &man); err != nil {
		return planManifest{}, fmt.Errorf("parse manifest %s: %w", desc.Digest, err)
	}
	return planManifest{desc: ocispec.Descriptor{MediaType: manifestMediaType(desc, b), Digest: desc.Digest, Size: int64(len(b))}, bytes: b, man: man}, nil
}

// transferPlan is one image to write at a registry: every distinct blob
// first, then the platform manifests, then the top level, so the
// destination never names a blob it lacks. Push and copy both run one: a
// push is a copy whose source is the store. (Referrers move their blobs
// with moveBlobs and write their manifests themselves.)
type transferPlan struct {
	// top is written last, under the tag; manifests are every manifest,
	// top among them when it is a manifest and not an index.
	top       planManifest
	manifests []planManifest
	// layers and configs are the distinct blobs of manifests, in manifest
	// order; skipped counts the foreign layers left out.
	layers, configs []ocispec.Descriptor
	skipped         int
}

// newTransferPlan lists the distinct layers and configs of manifests;
// foreign layers (with urls) are left out unless includeForeign.
func newTransferPlan(top planManifest, manifests []planManifest, includeForeign bool) *transferPlan {
	p := &transferPlan{top: top, manifests: manifests}
	seen := map[digest.Digest]bool{}
	for _, m := range manifests {
		for _, l := range m.man.Layers {
			if seen[l.Digest] {
				continue
			}
			seen[l.Digest] = true
			if len(l.URLs) > 0 && !includeForeign {
				p.skipped++
				continue
			}
			p.layers = append(p.layers, l)
		}
		if c := m.man.Config; c.Digest != "" && !seen[c.Digest] {
			seen[c.Digest] = true
			p.configs = append(p.configs, c)
		}
	}
	return p
}

// transfer is how one run moves a plan: where blobs are read, where they
// go, how many at a time, and how progress is worded.
type transfer struct {
	// open reads a blob at the source from an offset (an upload resumed
	// after a broken PATCH): the store (push) or SRC's repository (copy).
	open      func(ctx context.Context, desc ocispec.Descriptor, offset int64) (io.ReadCloser, error)
	dst       *registry.Repository
	mountFrom []string
	// limit bounds the blobs under way in each pool (layers, configs).
	limit int
	po    *progressOutput
	words transferWords
	// moved, when set, is told of each blob the destination now has (copy's
	// counts), one call at a time.
	moved func(how registry.BlobTransfer, size int64)
}

// transferWords are the progress messages and error prefixes of a push or
// a copy, as dockerd and wharf's copy word them.
type transferWords struct {
	verb          string // in errors: "<verb> manifest <digest>: …"
	layer, config string // what a blob that failed is called in errors
	queued        string // said of each blob reported, before any moves
	waiting       string // said of a blob reported that waits for a slot ("": nothing)
	moving        string // the byte progress
	existed       string // the destination had it
	done          string // uploaded
	quietConfigs  bool   // configs are not reported (push, as dockerd)
}

var (
	pushWords = transferWords{verb: "push", layer: "layer", config: "config", queued: "Preparing", waiting: "Waiting",
		moving: "Pushing", existed: "Layer already exists", done: "Pushed", quietConfigs: true}
	copyWords = transferWords{verb: "copy", layer: "blob", config: "blob", queued: "Waiting",
		moving: "Copying", existed: "Already exists", done: "Copied"}
)

// planBlob is one blob of a plan in eachBounded's pools.
type planBlob struct {
	desc   ocispec.Descriptor
	config bool
}

func planBlobs(descs []ocispec.Descriptor, config bool) []planBlob {
	out := make([]planBlob, len(descs))
	for i, d := range descs {
		out[i] = planBlob{d, config}
	}
	return out
}

// run writes the plan at t.dst: the blobs (moveBlobs), the platform
// manifests, and the top level under tag (none: by digest only).
func (p *transferPlan) run(ctx context.Context, t transfer, tag string) error {
	if err := p.moveBlobs(ctx, t); err != nil {
		return err
	}
	for _, m := range p.manifests {
		if m.desc.Digest == p.top.desc.Digest {
			continue
		}
		if err := t.dst.PushManifest(ctx, m.desc, m.bytes, ""); err != nil {
			return fmt.Errorf("%s manifest %s: %w", t.words.verb, m.desc.Digest, err)
		}
	}
	if err := t.dst.PushManifest(ctx, p.top.desc, p.top.bytes, tag); err != nil {
		return fmt.Errorf("%s manifest %s: %w", t.words.verb, p.top.desc.Digest, err)
	}
	return nil
}

// moveBlobs makes t.dst have every blob of the plan, through
// Repository.TransferBlob (HEAD, a cross-repository mount, or an upload
// streamed from t.open): the layers at most t.limit at a time, and beside
// them the configs, as many at a time — a config queued behind the layers
// added its own 5 round trips (HEAD, POST, GET, PATCH, PUT) after the last
// layer, ~190 ms at 25 ms RTT in case 7 of the bench. The first failure
// starts no more but lets the transfers under way finish (eachBounded).
func (p *transferPlan) moveBlobs(ctx context.Context, t transfer) error {
	layers, configs := planBlobs(p.layers, false), planBlobs(p.configs, true)
	for _, b := range append(append([]planBlob(nil), layers...), configs...) {
		if t.reported(b) {
			if err := t.po.layer(shortID(b.desc.Digest), t.words.queued); err != nil {
				return err
			}
		}
	}
	var waiting func(planBlob) error
	if t.words.waiting != "" {
		waiting = func(b planBlob) error {
			if !t.reported(b) {
				return nil
			}
			return t.po.layer(shortID(b.desc.Digest), t.words.waiting)
		}
	}
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	return eachBounded(stop, cancel, t.limit, waiting, func(b planBlob, _ func()) error {
		return t.moveBlob(ctx, b, &mu)
	}, layers, configs)
}

func (t *transfer) reported(b planBlob) bool { return !b.config || !t.words.quietConfigs }

// moveBlob moves one blob and reports it: the existed word, "Mounted from
// REPO", or byte progress then the done word.
func (t *transfer) moveBlob(ctx context.Context, b planBlob, mu *sync.Mutex) error {
	id := shortID(b.desc.Digest)
	how, from, err := t.dst.TransferBlob(ctx, b.desc, t.mountFrom, t.opener(b))
	if err != nil {
		noun := t.words.layer
		if b.config {
			noun = t.words.config
		}
		return fmt.Errorf("%s %s %s: %w", t.words.verb, noun, b.desc.Digest, err)
	}
	if t.moved != nil {
		mu.Lock()
		t.moved(how, b.desc.Size)
		mu.Unlock()
	}
	if !t.reported(b) {
		return nil
	}
	switch how {
	case registry.BlobExisted:
		return t.po.layer(id, t.words.existed)
	case registry.BlobMounted:
		return t.po.layer(id, "Mounted from "+from)
	default:
		return t.po.layer(id, t.words.done)
	}
}

// verifiedProgress is the progress of a reader that verifies itself, still
// saying which digest it verifies (VerifiedDigest).
type verifiedProgress struct {
	io.Reader
	io.Closer
	dgst digest.Digest
}

func (v verifiedProgress) VerifiedDigest() digest.Digest { return v.dgst }

// opener opens b for TransferBlob, reporting byte progress when b is
// reported.
func (t *transfer) opener(b planBlob) registry.BlobOpener {
	id, report := shortID(b.desc.Digest), t.reported(b)
	return func(ctx context.Context, offset int64) (io.ReadCloser, error) {
		rc, err := t.open(ctx, b.desc, offset)
		if err != nil || !report {
			return rc, err
		}
		pr := newProgressReader(rc, t.po, id, t.words.moving, b.desc.Size)
		pr.current = offset // a resumed upload goes on from where the registry is
		if v, ok := rc.(digestVerifier); ok {
			// Progress passes errors through: a reader that verifies
			// itself (copy's from 0) still does, and TransferBlob need
			// not hash it a second time.
			return verifiedProgress{pr, rc, v.VerifiedDigest()}, nil
		}
		return struct {
			io.Reader
			io.Closer
		}{pr, rc}, nil
	}
}

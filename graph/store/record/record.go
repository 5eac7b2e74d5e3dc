// Package record is the store's image records as values: the record of a
// local image with its platforms, the summary the image list shows, an
// image config as found in the wild, and the forms of a reference
// (fully qualified in the records, familiar on the API). It holds no
// state; graph/store keeps them in bbolt and graph/store/listindex and
// graph/store/migrate read them.
package record

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
)

// Image is one local image (the store's ImageRecord): what the tag store and
// RepoDigests point at.
type Image struct {
	// ID is the image ID: the config digest.
	ID digest.Digest
	// Target is the top-level descriptor as pulled or loaded (an index for a
	// multi-platform pull); RepoDigests pin it.
	Target ocispec.Descriptor
	// Manifest is the platform manifest whose config is ID.
	Manifest ocispec.Descriptor
	// Platforms are the platforms of the index Target held locally, in
	// the index's order; ID and Manifest are one of them.
	// Empty for an image whose target is a manifest, and for a record
	// written before records held platforms (Present: the one platform, Manifest).
	Platforms []Platform `json:",omitempty"`
	// RepoTags are fully qualified references (docker.io/library/busybox:latest);
	// shown in familiar form on the API.
	RepoTags []string
	// RepoDigests are fully qualified name@digest references.
	RepoDigests []string
	LastTagTime time.Time
	Created     time.Time
	// Trust is the signature policy's verdict the image was pulled under;
	// nil when no policy applied.
	Trust *types.Trust `json:",omitempty"`
}

// Clone is a deep copy of r.
func (r *Image) Clone() *Image {
	c := *r
	c.RepoTags = append([]string{}, r.RepoTags...)
	c.RepoDigests = append([]string{}, r.RepoDigests...)
	if r.Platforms != nil {
		c.Platforms = slices.Clone(r.Platforms)
	}
	return &c
}

// Platform is one platform of an image whose target is an index, held
// locally: its manifest (the index entry's descriptor), and its config
// digest (what the image ID is when this platform is the image's own).
//
// Why a list on the record: Docker's containerd image store
// keeps one image per tag, naming the index it was pulled from, and acts on
// the platforms whose content is present. wharf records those platforms
// explicitly, so that GC (the uses/blobs buckets) keeps exactly their
// blobs, rmi --platform can drop one, and no read of the index is needed
// to know what is present. The record's ID and Manifest stay those of one
// platform — the daemon's when it is present, else the first present one
// in the index's order (Docker's fallback) — so a single-platform image
// keeps the ID it always had, and every client that reads the ID as the
// config digest (docker CLI 28 at API 1.50, the Go SDK) is unaffected.
type Platform struct {
	Platform ocispec.Platform
	Manifest ocispec.Descriptor
	Config   digest.Digest
}

// Present are the platforms of r held locally. A record without Platforms
// (one written before records listed platforms, or an image whose target is not an index)
// has one: its Manifest and ID. Its Platform is then the manifest
// descriptor's, which may be empty (the config says it: the store's PlatformOf).
func (r *Image) Present() []Platform {
	if len(r.Platforms) > 0 {
		return r.Platforms
	}
	p := Platform{Manifest: r.Manifest, Config: r.ID}
	if r.Manifest.Platform != nil {
		p.Platform = *r.Manifest.Platform
	}
	return []Platform{p}
}

// View is r seen as its platform p: p's manifest, and p's config as ID.
// The references, target and platforms are r's.
func (r *Image) View(p Platform) *Image {
	v := r.Clone()
	v.ID, v.Manifest = p.Config, p.Manifest
	return v
}

// Summary is what the image list needs of one image.
type Summary struct {
	ID digest.Digest
	// Target is the record's target descriptor, without inline data.
	Target ocispec.Descriptor
	// Manifest is the record's platform manifest digest.
	Manifest digest.Digest
	// RepoTags and RepoDigests are in familiar form (FamiliarRefs of the
	// record's), as the API shows them: listing parses no reference.
	RepoTags    []string
	RepoDigests []string
	// HasMeta: the manifest and config were read when the summary was
	// written, and the fields below hold what they say. When false the
	// reader asks Meta itself (and skips the image when that fails).
	HasMeta bool
	// Created is the config's creation time (zero when unknown).
	Created time.Time
	Labels  map[string]string
	Parent  string
	Size    int64
}

// Record is the part of the record the summary holds: enough for Meta
// (the references are left out: they are not fully qualified here).
func (sm *Summary) Record() *Image {
	return &Image{ID: sm.ID, Target: sm.Target, Manifest: ocispec.Descriptor{Digest: sm.Manifest},
		RepoTags: []string{}, RepoDigests: []string{}}
}

// PrevRefs maps old's references (tags, or digests) to their familiar
// form in prev; nil when prev was not written from old.
func PrevRefs(old *Image, prev *Summary, tags bool) map[string]string {
	if old == nil || prev == nil || prev.ID != old.ID {
		return nil
	}
	full, fam := old.RepoDigests, prev.RepoDigests
	if tags {
		full, fam = old.RepoTags, prev.RepoTags
	}
	if len(full) != len(fam) {
		return nil
	}
	m := make(map[string]string, len(full))
	for i, r := range full {
		m[r] = fam[i]
	}
	return m
}

// FamiliarFrom is FamiliarRefs(refs), taking the familiar form of a
// reference from known when it is there.
func FamiliarFrom(refs []string, known map[string]string) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		if f, ok := known[r]; ok {
			out = append(out, f)
		} else {
			out = append(out, Familiar(r))
		}
	}
	return out
}

// DecodeSummary decodes a stored summary.
func DecodeSummary(b []byte) (*Summary, error) {
	var sm Summary
	if err := json.Unmarshal(b, &sm); err != nil {
		return nil, err
	}
	sm.RepoTags = nonNil(sm.RepoTags)
	sm.RepoDigests = nonNil(sm.RepoDigests)
	return &sm, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ImageConfig is an image config as found in the wild: an OCI or Docker
// image config, or a Docker v1 image JSON / schema1 v1Compatibility record
// (which adds id, parent, container, container_config, docker_version).
type ImageConfig struct {
	dockerspec.DockerOCIImage

	Comment         string                           `json:"comment,omitempty"`
	ID              string                           `json:"id,omitempty"`
	Parent          string                           `json:"parent,omitempty"`
	Container       string                           `json:"container,omitempty"`
	ContainerConfig *dockerspec.DockerOCIImageConfig `json:"container_config,omitempty"`
	DockerVersion   string                           `json:"docker_version,omitempty"`
}

// ParseImageConfig parses an image config.
func ParseImageConfig(b []byte) (*ImageConfig, error) {
	var c ImageConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("parse image config: %v%.0w", err, errdefs.ErrInvalidArgument)
	}
	return &c, nil
}

// CreatedTime is the config's creation time, zero when unknown.
func (c *ImageConfig) CreatedTime() time.Time {
	if c.Created == nil {
		return time.Time{}
	}
	return *c.Created
}

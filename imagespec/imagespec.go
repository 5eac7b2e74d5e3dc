// Package imagespec holds what wharf knows about image documents and
// platforms, once: the media types beside the OCI ones, the predicates over
// them, sniffing a document's type from its bytes, and platform matching.
// It imports no wharf package, so the store, the archive and distribution
// code and the registry client all share it.
package imagespec

import (
	"encoding/json"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Docker media types (distribution's schema2 and schema1).
const (
	MediaTypeDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaTypeDockerManifest     = "application/vnd.docker.distribution.manifest.v2+json"
	MediaTypeDockerConfig       = "application/vnd.docker.container.image.v1+json"
	MediaTypeDockerLayer        = "application/vnd.docker.image.rootfs.diff.tar"
	MediaTypeDockerLayerGzip    = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	MediaTypeDockerSchema1      = "application/vnd.docker.distribution.manifest.v1+json"
	MediaTypeDockerSchema1JWS   = "application/vnd.docker.distribution.manifest.v1+prettyjws"
)

// IsIndex reports whether mt is an OCI index or a Docker manifest list.
func IsIndex(mt string) bool {
	return mt == ocispec.MediaTypeImageIndex || mt == MediaTypeDockerManifestList
}

// IsSchema1 reports the deprecated Docker schema1 manifests, which carry no
// config blob.
func IsSchema1(mt string) bool {
	return mt == MediaTypeDockerSchema1 || mt == MediaTypeDockerSchema1JWS
}

// IsTarLayer reports whether mt is a plain or gzip tar layer (whose DiffID
// can be computed by decompressing at most once).
func IsTarLayer(mt string) bool {
	switch mt {
	case ocispec.MediaTypeImageLayer, ocispec.MediaTypeImageLayerGzip, MediaTypeDockerLayer, MediaTypeDockerLayerGzip:
		return true
	}
	return false
}

// IsUncompressedLayer reports a plain tar layer: its DiffID is its digest.
func IsUncompressedLayer(mt string) bool {
	return mt == ocispec.MediaTypeImageLayer || mt == MediaTypeDockerLayer
}

// Sniff reads the mediaType field of a manifest document, or guesses from
// its shape when the field is absent (OCI allows that); "" when b is not a
// JSON object.
func Sniff(b []byte) string {
	var doc struct {
		SchemaVersion int             `json:"schemaVersion"`
		MediaType     string          `json:"mediaType"`
		Manifests     json.RawMessage `json:"manifests"`
		FSLayers      json.RawMessage `json:"fsLayers"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return ""
	}
	switch {
	case doc.MediaType != "":
		return doc.MediaType
	case doc.Manifests != nil:
		return ocispec.MediaTypeImageIndex
	case doc.SchemaVersion == 1 || doc.FSLayers != nil:
		return MediaTypeDockerSchema1
	default:
		return ocispec.MediaTypeImageManifest
	}
}

// DeclaresNoType reports whether the document b leaves out mediaType (OCI
// allows that): then a descriptor's type is the only one there is.
func DeclaresNoType(b []byte) bool {
	var doc struct {
		MediaType string `json:"mediaType"`
	}
	return json.Unmarshal(b, &doc) == nil && doc.MediaType == ""
}

// PlatformMatches reports whether have satisfies want: empty fields of want
// match anything; arm64 without a variant is v8.
func PlatformMatches(want, have ocispec.Platform) bool {
	if want.OS != "" && want.OS != have.OS {
		return false
	}
	if want.Architecture != "" && want.Architecture != have.Architecture {
		return false
	}
	if want.Variant == "" {
		return true
	}
	norm := func(arch, v string) string {
		if arch == "arm64" && v == "" {
			return "v8"
		}
		return v
	}
	return norm(want.Architecture, want.Variant) == norm(have.Architecture, have.Variant)
}

// FormatPlatform is os/arch[/variant].
func FormatPlatform(p ocispec.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// ConfigPlatform is the platform an image config declares, nil when it
// declares none.
func ConfigPlatform(config []byte) *ocispec.Platform {
	var img ocispec.Image
	if len(config) == 0 || json.Unmarshal(config, &img) != nil || img.OS == "" {
		return nil
	}
	p := img.Platform
	return &p
}

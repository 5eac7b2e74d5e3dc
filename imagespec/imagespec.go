// Package imagespec holds what wharf knows about image documents and
// platforms, once: the media types beside the OCI ones, the predicates over
// them, sniffing a document's type from its bytes, and platforms: parsing,
// matching and formatting them and choosing an index's entry, on top of
// github.com/containerd/platforms. It imports no wharf package, so the
// store, the archive and distribution code and the registry client all
// share it.
package imagespec

import (
	"encoding/base64"
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

// ManifestMediaTypes are the manifest and index types wharf reads,
// preferred first (schema1 last: read only, for old registries): the
// Accept header of a manifest request.
var ManifestMediaTypes = []string{
	ocispec.MediaTypeImageIndex,
	MediaTypeDockerManifestList,
	ocispec.MediaTypeImageManifest,
	MediaTypeDockerManifest,
	MediaTypeDockerSchema1JWS,
	MediaTypeDockerSchema1,
}

// Annotations BuildKit puts on the attestation manifests of an index.
const (
	AnnotationReferenceType   = "vnd.docker.reference.type"
	AnnotationReferenceDigest = "vnd.docker.reference.digest"
	AttestationManifestType   = "attestation-manifest"
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

// IsManifest reports an OCI image manifest or a Docker schema2 manifest.
func IsManifest(mt string) bool {
	return mt == ocispec.MediaTypeImageManifest || mt == MediaTypeDockerManifest
}

// IsKnownManifest reports any manifest or index type wharf reads.
func IsKnownManifest(mt string) bool {
	return IsIndex(mt) || IsManifest(mt) || IsSchema1(mt)
}

// IsAttestation reports an index entry that is not an image: BuildKit's
// attestation manifests (vnd.docker.reference.type=attestation-manifest)
// and other entries of platform unknown/unknown.
func IsAttestation(d ocispec.Descriptor) bool {
	if d.Annotations[AnnotationReferenceType] == AttestationManifestType {
		return true
	}
	return d.Platform != nil && d.Platform.OS == "unknown" && d.Platform.Architecture == "unknown"
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
// its shape when the field is absent (OCI allows that; a signed schema1
// manifest is told from an unsigned one by its JWS); "" when b is not a
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
	case present(doc.Manifests):
		return ocispec.MediaTypeImageIndex
	case doc.SchemaVersion == 1 || present(doc.FSLayers):
		if _, ok := Schema1Payload(b); ok {
			return MediaTypeDockerSchema1JWS
		}
		return MediaTypeDockerSchema1
	default:
		return ocispec.MediaTypeImageManifest
	}
}

// present reports a JSON field that is there and not null.
func present(m json.RawMessage) bool { return len(m) > 0 && string(m) != "null" }

// Schema1Payload returns the signed payload of a JWS-signed schema1
// manifest (what its digest covers): the bytes up to formatLength plus the
// decoded formatTail of the first signature's protected header. ok is false
// when b is not such a manifest, or its payload does not declare
// schemaVersion 1.
func Schema1Payload(b []byte) (payload []byte, ok bool) {
	var m struct {
		Signatures []struct {
			Protected string `json:"protected"`
		} `json:"signatures"`
	}
	if json.Unmarshal(b, &m) != nil || len(m.Signatures) == 0 {
		return nil, false
	}
	prot, err := base64.RawURLEncoding.DecodeString(trimPadding(m.Signatures[0].Protected))
	if err != nil {
		return nil, false
	}
	var p struct {
		FormatLength int    `json:"formatLength"`
		FormatTail   string `json:"formatTail"`
	}
	if json.Unmarshal(prot, &p) != nil || p.FormatLength <= 0 || p.FormatLength > len(b) {
		return nil, false
	}
	tail, err := base64.RawURLEncoding.DecodeString(trimPadding(p.FormatTail))
	if err != nil {
		return nil, false
	}
	out := make([]byte, 0, p.FormatLength+len(tail))
	out = append(out, b[:p.FormatLength]...)
	out = append(out, tail...)
	var doc struct {
		SchemaVersion int `json:"schemaVersion"`
	}
	if json.Unmarshal(out, &doc) != nil || doc.SchemaVersion != 1 {
		return nil, false
	}
	return out, true
}

func trimPadding(s string) string {
	for len(s) > 0 && s[len(s)-1] == '=' {
		s = s[:len(s)-1]
	}
	return s
}

// DeclaresNoType reports whether the document b leaves out mediaType (OCI
// allows that): then a descriptor's type is the only one there is.
func DeclaresNoType(b []byte) bool {
	var doc struct {
		MediaType string `json:"mediaType"`
	}
	return json.Unmarshal(b, &doc) == nil && doc.MediaType == ""
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

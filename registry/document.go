package registry

import (
	"encoding/json"
	"slices"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/wharfproject/wharf/imagespec"
)

// docKind is what a manifest document is, judged from its body.
type docKind int

const (
	kindManifest docKind = iota + 1
	kindIndex
	kindSchema1
)

// document is the union of the manifest formats wharf reads. Fields are
// json.RawMessage where presence matters (a document with both "manifests"
// and "layers" is refused, even if one is empty).
type document struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        json.RawMessage   `json:"config"`
	Layers        json.RawMessage   `json:"layers"`
	Manifests     json.RawMessage   `json:"manifests"`
	Annotations   map[string]string `json:"annotations"`
	FSLayers      json.RawMessage   `json:"fsLayers"`
	History       json.RawMessage   `json:"history"`
}

// decoded is a document classified and parsed.
type decoded struct {
	kind      docKind
	mediaType string
	manifest  ocispec.Manifest
	index     ocispec.Index
	// schema1
	v1Config []byte
	v1Layers []ocispec.Descriptor
}

func present(m json.RawMessage) bool { return len(m) > 0 && string(m) != "null" }

// decodeDocument classifies body; served is the Content-Type it came with.
// A document that is both a manifest and an index, or whose media type
// (served or declared) contradicts its body, is refused.
func decodeDocument(host, served string, body []byte) (*decoded, error) {
	var d document
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, invalidDocument(host, "manifest is not valid JSON: %v", err)
	}
	isIndex := present(d.Manifests)
	isManifest := present(d.Config) || present(d.Layers)
	isSchema1 := d.SchemaVersion == 1 || present(d.FSLayers)
	switch {
	case isIndex && (isManifest || isSchema1):
		return nil, invalidDocument(host, "document is both a manifest and an index")
	case isManifest && isSchema1:
		return nil, invalidDocument(host, "document is both a schema1 and a schema2 manifest")
	case !isIndex && !isManifest && !isSchema1:
		return nil, invalidDocument(host, "document is neither a manifest nor an index")
	}
	out := &decoded{}
	switch {
	case isIndex:
		out.kind = kindIndex
	case isManifest:
		out.kind = kindManifest
	default:
		out.kind = kindSchema1
	}
	for _, mt := range []string{d.MediaType, served} {
		if !imagespec.IsKnownManifest(mt) {
			continue
		}
		if k := kindOf(mt); k != out.kind {
			return nil, invalidDocument(host, "media type %s contradicts the document, which is %s", mt, kindName(out.kind))
		}
	}
	out.mediaType = d.MediaType
	if out.mediaType == "" && imagespec.IsKnownManifest(served) {
		out.mediaType = served
	}
	switch out.kind {
	case kindIndex:
		if err := json.Unmarshal(body, &out.index); err != nil {
			return nil, invalidDocument(host, "index: %v", err)
		}
		if out.mediaType == "" {
			out.mediaType = ocispec.MediaTypeImageIndex
		}
		for _, m := range out.index.Manifests {
			if err := m.Digest.Validate(); err != nil {
				return nil, invalidDocument(host, "index entry has an invalid digest %q", m.Digest)
			}
		}
	case kindManifest:
		if err := json.Unmarshal(body, &out.manifest); err != nil {
			return nil, invalidDocument(host, "manifest: %v", err)
		}
		if out.mediaType == "" {
			out.mediaType = ocispec.MediaTypeImageManifest
		}
		if err := out.manifest.Config.Digest.Validate(); err != nil {
			return nil, invalidDocument(host, "manifest config has an invalid digest %q", out.manifest.Config.Digest)
		}
		for _, l := range out.manifest.Layers {
			if err := l.Digest.Validate(); err != nil {
				return nil, invalidDocument(host, "manifest layer has an invalid digest %q", l.Digest)
			}
		}
	case kindSchema1:
		if err := decodeSchema1(host, body, out); err != nil {
			return nil, err
		}
		if out.mediaType == "" {
			out.mediaType = imagespec.MediaTypeDockerSchema1
			if _, ok := imagespec.Schema1Payload(body); ok {
				out.mediaType = imagespec.MediaTypeDockerSchema1JWS
			}
		}
	}
	return out, nil
}

func kindOf(mt string) docKind {
	switch {
	case imagespec.IsIndex(mt):
		return kindIndex
	case imagespec.IsSchema1(mt):
		return kindSchema1
	}
	return kindManifest
}

func kindName(k docKind) string {
	switch k {
	case kindIndex:
		return "an index"
	case kindSchema1:
		return "a schema1 manifest"
	}
	return "a manifest"
}

// decodeSchema1 reads a Docker schema1 manifest: the image config is the
// v1Compatibility of history[0] (the top layer), layers are fsLayers in
// reverse (schema1 lists the top first), sizes unknown (0).
func decodeSchema1(host string, body []byte, out *decoded) error {
	var m struct {
		FSLayers []struct {
			BlobSum digest.Digest `json:"blobSum"`
		} `json:"fsLayers"`
		History []struct {
			V1Compatibility string `json:"v1Compatibility"`
		} `json:"history"`
	}
	// A signed manifest's digest covers only its payload: decode that, so
	// bytes outside the signature cannot change what is read.
	if p, ok := imagespec.Schema1Payload(body); ok {
		body = p
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return invalidDocument(host, "schema1 manifest: %v", err)
	}
	if len(m.History) == 0 || len(m.FSLayers) == 0 {
		return invalidDocument(host, "schema1 manifest has no history or no layers")
	}
	if len(m.History) != len(m.FSLayers) {
		return invalidDocument(host, "schema1 manifest has %d history entries for %d layers", len(m.History), len(m.FSLayers))
	}
	cfg := []byte(m.History[0].V1Compatibility)
	if !json.Valid(cfg) {
		return invalidDocument(host, "schema1 v1Compatibility is not JSON")
	}
	out.v1Config = cfg
	for _, l := range slices.Backward(m.FSLayers) {
		if err := l.BlobSum.Validate(); err != nil {
			return invalidDocument(host, "schema1 layer has an invalid digest %q", l.BlobSum)
		}
		out.v1Layers = append(out.v1Layers, ocispec.Descriptor{MediaType: imagespec.MediaTypeDockerLayerGzip, Digest: l.BlobSum})
	}
	return nil
}

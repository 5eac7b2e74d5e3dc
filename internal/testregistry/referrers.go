package testregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Referrer fixtures: artifacts that refer to an image (OCI 1.1 subject),
// the referrers tag schema's index, and cosign-style signature tags.

// MediaTypeCosignSimpleSigning is the layer type of a cosign signature.
const MediaTypeCosignSimpleSigning = "application/vnd.dev.cosign.simplesigning.v1+json"

// Artifact is a manifest with a subject and its blobs.
type Artifact struct {
	Manifest Blob
	Blobs    []Blob // config first
	// ArtifactType is what the referrers API reports for it.
	ArtifactType string
	Annotations  map[string]string
}

// Descriptor is the artifact's entry in a referrers index: media type,
// digest, size, artifactType and annotations.
func (a *Artifact) Descriptor() ocispec.Descriptor {
	d := a.Manifest.Descriptor()
	d.ArtifactType = a.ArtifactType
	d.Annotations = a.Annotations
	return d
}

// ArtifactOptions describe an artifact.
type ArtifactOptions struct {
	// ArtifactType is set both as the manifest's artifactType and as its
	// config's media type (the pre-1.1 convention, which registries that
	// derive the type from the config report alike).
	ArtifactType string
	// Subject is what the artifact refers to; nil for none (a cosign tag).
	Subject *ocispec.Descriptor
	// Annotations go on the manifest.
	Annotations map[string]string
	// Data is the one layer's content (media type LayerType, default
	// application/octet-stream).
	Data      []byte
	LayerType string
}

// NewArtifact builds an artifact manifest.
func NewArtifact(opts ArtifactOptions) (*Artifact, error) {
	if opts.LayerType == "" {
		opts.LayerType = "application/octet-stream"
	}
	cfg := NewBlob(opts.ArtifactType, []byte("{}"))
	layer := NewBlob(opts.LayerType, opts.Data)
	m := struct {
		manifestJSON
		Subject *ocispec.Descriptor `json:"subject,omitempty"`
	}{
		manifestJSON: manifestJSON{
			SchemaVersion: 2,
			MediaType:     MediaTypeOCIManifest,
			ArtifactType:  opts.ArtifactType,
			Config:        cfg.Descriptor(),
			Layers:        []ocispec.Descriptor{layer.Descriptor()},
			Annotations:   opts.Annotations,
		},
		Subject: opts.Subject,
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("testregistry: artifact: %w", err)
	}
	return &Artifact{Manifest: NewBlob(MediaTypeOCIManifest, b), Blobs: []Blob{cfg, layer}, ArtifactType: opts.ArtifactType, Annotations: opts.Annotations}, nil
}

// NewCosignSignature is a signature as cosign writes it beside its tag
// sha256-<hex>.sig: an image-config config, one simple-signing layer with
// the signature in an annotation, no subject, no artifactType.
func NewCosignSignature(subject digest.Digest) (*Artifact, error) {
	payload := []byte(`{"critical":{"identity":{"docker-reference":"x"},"image":{"docker-manifest-digest":"` + subject.String() + `"},"type":"cosign container image signature"},"optional":null}`)
	cfg := NewBlob(MediaTypeOCIConfig, []byte(`{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":["`+digest.FromBytes(payload).String()+`"]}}`))
	layer := NewBlob(MediaTypeCosignSimpleSigning, payload)
	ld := layer.Descriptor()
	ld.Annotations = map[string]string{"dev.cosignproject.cosign/signature": "MEUCIQDfake"}
	m := manifestJSON{SchemaVersion: 2, MediaType: MediaTypeOCIManifest, Config: cfg.Descriptor(), Layers: []ocispec.Descriptor{ld}}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("testregistry: cosign signature: %w", err)
	}
	return &Artifact{Manifest: NewBlob(MediaTypeOCIManifest, b), Blobs: []Blob{cfg, layer}, ArtifactType: MediaTypeOCIConfig}, nil
}

// TagSchemaTag is the referrers tag schema's tag for subject: <alg>-<hex>.
func TagSchemaTag(subject digest.Digest) string {
	return string(subject.Algorithm()) + "-" + subject.Encoded()
}

// NewReferrersIndex is the index a client without the referrers API keeps
// under TagSchemaTag(subject): one entry per artifact.
func NewReferrersIndex(artifacts ...*Artifact) (Blob, error) {
	idx := indexJSON{SchemaVersion: 2, MediaType: MediaTypeOCIIndex, Manifests: []ocispec.Descriptor{}}
	for _, a := range artifacts {
		idx.Manifests = append(idx.Manifests, a.Descriptor())
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return Blob{}, fmt.Errorf("testregistry: referrers index: %w", err)
	}
	return NewBlob(MediaTypeOCIIndex, b), nil
}

// PushArtifact uploads the artifact's blobs and its manifest as repo:tag
// (by digest when tag is empty).
func (c *Client) PushArtifact(ctx context.Context, repo, tag string, a *Artifact) error {
	for _, b := range a.Blobs {
		if err := c.PutBlob(ctx, repo, b); err != nil {
			return err
		}
	}
	ref := tag
	if ref == "" {
		ref = a.Manifest.Digest
	}
	return c.PutManifest(ctx, repo, ref, a.Manifest)
}

// ReferrersRegistry is go-containerregistry's in-memory registry with the
// OCI 1.1 referrers API on, behind a request Counter: the distribution
// registry (v3.1) does not serve the API, so this is the registry with
// it. It has no auth, does not paginate referrers, ignores artifactType=
// (without saying it filtered) and reports a referrer's artifactType from
// its config's media type.
type ReferrersRegistry struct {
	Host    string // through the counter
	URL     string
	Counter *Counter
	srv     *httptest.Server
}

// StartReferrersRegistry starts it on 127.0.0.1.
func StartReferrersRegistry() (*ReferrersRegistry, error) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.WithReferrersSupport(true), ggcrregistry.Logger(discardLogger())))
	cnt, err := NewCounter(srv.URL)
	if err != nil {
		srv.Close()
		return nil, err
	}
	return &ReferrersRegistry{Host: cnt.Host, URL: cnt.URL, Counter: cnt, srv: srv}, nil
}

// Client is a fixture client for it.
func (r *ReferrersRegistry) Client() *Client { return &Client{Base: r.URL} }

// Close stops it.
func (r *ReferrersRegistry) Close() {
	r.Counter.Close()
	r.srv.CloseClientConnections()
	r.srv.Close()
}

func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }

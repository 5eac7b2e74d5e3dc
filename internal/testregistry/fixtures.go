package testregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Media types of the fixtures.
const (
	MediaTypeOCIManifest    = ocispec.MediaTypeImageManifest
	MediaTypeOCIIndex       = ocispec.MediaTypeImageIndex
	MediaTypeOCIConfig      = ocispec.MediaTypeImageConfig
	MediaTypeOCILayer       = ocispec.MediaTypeImageLayerGzip
	MediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	MediaTypeDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaTypeDockerConfig   = "application/vnd.docker.container.image.v1+json"
	MediaTypeDockerLayer    = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	MediaTypeInToto         = "application/vnd.in-toto+json"
)

// Blob is content with its digest and media type.
type Blob struct {
	MediaType string
	Digest    string
	Data      []byte
}

// NewBlob digests data.
func NewBlob(mediaType string, data []byte) Blob {
	return Blob{MediaType: mediaType, Digest: digest.FromBytes(data).String(), Data: data}
}

// Descriptor describes the blob.
func (b Blob) Descriptor() ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: b.MediaType, Digest: digest.Digest(b.Digest), Size: int64(len(b.Data))}
}

// ImageOptions describe a random single-platform image.
type ImageOptions struct {
	// Docker selects Docker schema2 media types instead of OCI ones.
	Docker bool
	// Platform defaults to linux/amd64.
	Platform ocispec.Platform
	// Layers defaults to 1; LayerSize (random bytes in one file) to 256.
	Layers    int
	LayerSize int
	Labels    map[string]string
	Env       []string
	Cmd       []string
	// Annotations go on the manifest (OCI only).
	Annotations map[string]string
	// Created defaults to a fixed second in 2025, so dates compare exactly.
	Created time.Time
}

// Image is a random image: config, compressed layers and manifest.
type Image struct {
	Manifest Blob
	Config   Blob
	Layers   []Blob
	// DiffIDs are the uncompressed layer digests.
	DiffIDs  []string
	Platform ocispec.Platform
}

// ID is the image ID: the config digest.
func (img *Image) ID() string { return img.Config.Digest }

// Size is the sum of the compressed layer sizes (what wharf and dockerd's
// containerd store call an image's Size).
func (img *Image) Size() int64 {
	var n int64
	for _, l := range img.Layers {
		n += int64(len(l.Data))
	}
	return n
}

// NewImage builds a random image.
func NewImage(opts ImageOptions) (*Image, error) {
	if opts.Platform.OS == "" {
		opts.Platform = ocispec.Platform{OS: "linux", Architecture: "amd64"}
	}
	if opts.Layers <= 0 {
		opts.Layers = 1
	}
	if opts.LayerSize <= 0 {
		opts.LayerSize = 256
	}
	if opts.Created.IsZero() {
		opts.Created = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	}
	if opts.Cmd == nil {
		opts.Cmd = []string{"/bin/sh"}
	}
	if opts.Env == nil {
		opts.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	layerType, configType, manifestType := MediaTypeOCILayer, MediaTypeOCIConfig, MediaTypeOCIManifest
	if opts.Docker {
		layerType, configType, manifestType = MediaTypeDockerLayer, MediaTypeDockerConfig, MediaTypeDockerManifest
	}
	img := &Image{Platform: opts.Platform}
	var history []ocispec.History
	for i := 0; i < opts.Layers; i++ {
		raw, err := RandomTar(fmt.Sprintf("layer%d/data.bin", i), opts.LayerSize)
		if err != nil {
			return nil, err
		}
		gz, err := gzipBytes(raw)
		if err != nil {
			return nil, err
		}
		img.Layers = append(img.Layers, NewBlob(layerType, gz))
		img.DiffIDs = append(img.DiffIDs, digest.FromBytes(raw).String())
		created := opts.Created
		history = append(history, ocispec.History{Created: &created, CreatedBy: fmt.Sprintf("/bin/sh -c #(nop) ADD layer %d", i), Comment: "wharf test fixture"})
	}
	created := opts.Created
	cfg := ocispec.Image{
		Created:  &created,
		Author:   "wharf-tests",
		Platform: opts.Platform,
		Config: ocispec.ImageConfig{
			Env:        opts.Env,
			Cmd:        opts.Cmd,
			Labels:     opts.Labels,
			WorkingDir: "/",
		},
		RootFS:  ocispec.RootFS{Type: "layers"},
		History: history,
	}
	for _, d := range img.DiffIDs {
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, digest.Digest(d))
	}
	cb, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("testregistry: config: %w", err)
	}
	img.Config = NewBlob(configType, cb)
	m := manifestJSON{SchemaVersion: 2, MediaType: manifestType, Config: img.Config.Descriptor()}
	for _, l := range img.Layers {
		m.Layers = append(m.Layers, l.Descriptor())
	}
	if !opts.Docker {
		m.Annotations = opts.Annotations
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("testregistry: manifest: %w", err)
	}
	img.Manifest = NewBlob(manifestType, mb)
	return img, nil
}

// manifestJSON is an OCI manifest or Docker schema2 manifest (same shape).
type manifestJSON struct {
	SchemaVersion int                  `json:"schemaVersion"`
	MediaType     string               `json:"mediaType"`
	ArtifactType  string               `json:"artifactType,omitempty"`
	Config        ocispec.Descriptor   `json:"config"`
	Layers        []ocispec.Descriptor `json:"layers"`
	Annotations   map[string]string    `json:"annotations,omitempty"`
}

// IndexOptions describe a random multi-platform image.
type IndexOptions struct {
	// Docker selects a Docker manifest list of schema2 manifests instead of an
	// OCI index of OCI manifests.
	Docker bool
	// Platforms default to linux/amd64 and linux/arm64/v8.
	Platforms []ocispec.Platform
	// Attestation adds a buildx-style attestation manifest (platform
	// unknown/unknown, vnd.docker.reference.type=attestation-manifest) for
	// the first platform.
	Attestation bool
	// AttestationStatement is the attestation's in-toto statement (an
	// SPDX one); nil: one with an empty predicate.
	AttestationStatement []byte
	Labels               map[string]string
	Annotations          map[string]string // on the index (OCI only)
}

// Index is a random multi-platform image.
type Index struct {
	Index       Blob
	Images      []*Image
	Attestation *Image // the attestation manifest, when asked for
}

// Digest is the index digest (what NAME@digest pins).
func (ix *Index) Digest() string { return ix.Index.Digest }

// NewIndex builds a multi-platform image.
func NewIndex(opts IndexOptions) (*Index, error) {
	if len(opts.Platforms) == 0 {
		opts.Platforms = []ocispec.Platform{
			{OS: "linux", Architecture: "amd64"},
			{OS: "linux", Architecture: "arm64", Variant: "v8"},
		}
	}
	ix := &Index{}
	listType := MediaTypeOCIIndex
	if opts.Docker {
		listType = MediaTypeDockerList
	}
	idx := indexJSON{SchemaVersion: 2, MediaType: listType}
	if !opts.Docker {
		idx.Annotations = opts.Annotations
	}
	for _, p := range opts.Platforms {
		img, err := NewImage(ImageOptions{Docker: opts.Docker, Platform: p, Labels: opts.Labels})
		if err != nil {
			return nil, err
		}
		ix.Images = append(ix.Images, img)
		d := img.Manifest.Descriptor()
		plat := p
		d.Platform = &plat
		idx.Manifests = append(idx.Manifests, d)
	}
	if opts.Attestation {
		att, err := newAttestation(opts.AttestationStatement)
		if err != nil {
			return nil, err
		}
		ix.Attestation = att
		d := att.Manifest.Descriptor()
		d.Platform = &ocispec.Platform{OS: "unknown", Architecture: "unknown"}
		d.Annotations = map[string]string{
			"vnd.docker.reference.type":   "attestation-manifest",
			"vnd.docker.reference.digest": ix.Images[0].Manifest.Digest,
		}
		idx.Manifests = append(idx.Manifests, d)
	}
	b, err := json.Marshal(idx)
	if err != nil {
		return nil, fmt.Errorf("testregistry: index: %w", err)
	}
	ix.Index = NewBlob(listType, b)
	return ix, nil
}

type indexJSON struct {
	SchemaVersion int                  `json:"schemaVersion"`
	MediaType     string               `json:"mediaType"`
	Manifests     []ocispec.Descriptor `json:"manifests"`
	Annotations   map[string]string    `json:"annotations,omitempty"`
}

// newAttestation is an in-toto attestation manifest as buildx writes it.
func newAttestation(stmt []byte) (*Image, error) {
	if stmt == nil {
		stmt = []byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://spdx.dev/Document","subject":[],"predicate":{}}`)
	}
	layer := NewBlob(MediaTypeInToto, stmt)
	layer.MediaType = MediaTypeInToto
	cfg := NewBlob(MediaTypeOCIConfig, []byte(`{"architecture":"unknown","os":"unknown","config":{},"rootfs":{"type":"layers","diff_ids":["`+layer.Digest+`"]}}`))
	ld := layer.Descriptor()
	ld.Annotations = map[string]string{"in-toto.io/predicate-type": "https://spdx.dev/Document"}
	m := manifestJSON{SchemaVersion: 2, MediaType: MediaTypeOCIManifest, Config: cfg.Descriptor(), Layers: []ocispec.Descriptor{ld}}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &Image{
		Manifest: NewBlob(MediaTypeOCIManifest, mb),
		Config:   cfg,
		Layers:   []Blob{layer},
		Platform: ocispec.Platform{OS: "unknown", Architecture: "unknown"},
	}, nil
}

// PushImage uploads img's blobs and its manifest as repo:tag (tag may be empty:
// then the manifest is put by digest only).
func (c *Client) PushImage(ctx context.Context, repo, tag string, img *Image) error {
	for _, l := range img.Layers {
		if err := c.PutBlob(ctx, repo, l); err != nil {
			return err
		}
	}
	if err := c.PutBlob(ctx, repo, img.Config); err != nil {
		return err
	}
	ref := tag
	if ref == "" {
		ref = img.Manifest.Digest
	}
	return c.PutManifest(ctx, repo, ref, img.Manifest)
}

// PushIndex uploads every platform image by digest, then the index as repo:tag.
func (c *Client) PushIndex(ctx context.Context, repo, tag string, ix *Index) error {
	for _, img := range ix.Images {
		if err := c.PushImage(ctx, repo, "", img); err != nil {
			return err
		}
	}
	if ix.Attestation != nil {
		if err := c.PushImage(ctx, repo, "", ix.Attestation); err != nil {
			return err
		}
	}
	ref := tag
	if ref == "" {
		ref = ix.Index.Digest
	}
	return c.PutManifest(ctx, repo, ref, ix.Index)
}

// RandomTar is an uncompressed tar holding one file of size random bytes
// (e.g. a rootfs for `wharf import`).
func RandomTar(name string, size int) ([]byte, error) {
	data := make([]byte, size)
	if _, err := rand.Read(data); err != nil {
		return nil, fmt.Errorf("testregistry: random: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("testregistry: tar: %w", err)
	}
	if _, err := tw.Write(data); err != nil {
		return nil, fmt.Errorf("testregistry: tar: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("testregistry: tar: %w", err)
	}
	return buf.Bytes(), nil
}

// gzipBytes compresses a random layer. BestSpeed: random bytes do not
// compress at any level, and the default level spends about 3 s per MiB
// under -race searching for matches (a 24 MiB layer took 70 s).
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

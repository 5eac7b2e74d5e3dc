package store

import (
	"encoding/json"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Size caps for metadata read from the store or from archives.
const (
	// MaxManifestSize is containerd's and distribution's 4 MiB limit on
	// manifests and indexes: real ones are a few KiB.
	MaxManifestSize = 4 << 20
	// MaxConfigSize caps an image config at 8 MiB: configs with long
	// histories reach a few hundred KiB.
	MaxConfigSize = 8 << 20
)

// ImageMeta is what the store derives from an image's (immutable) manifest
// and config; cached per manifest digest (a manifest names one config).
type ImageMeta struct {
	Manifest  ocispec.Manifest
	RawConfig []byte
	Config    *ImageConfig
	Size      int64 // sum of the compressed layer sizes
}

// Meta loads (or returns the cached) manifest and config of rec.
func (s *Store) Meta(rec *ImageRecord) (*ImageMeta, error) {
	return s.meta1(rec, true)
}

// metaNoFill is Meta for a walk over every image (the check): it uses a
// cached entry but adds none, so the walk neither evicts the images in
// use nor fills the cache with 4,096 it will not read again.
func (s *Store) metaNoFill(rec *ImageRecord) (*ImageMeta, error) {
	return s.meta1(rec, false)
}

func (s *Store) meta1(rec *ImageRecord, fill bool) (*ImageMeta, error) {
	s.metaMu.Lock()
	var m *ImageMeta
	var ok bool
	if fill {
		m, ok = s.meta.Get(rec.Manifest.Digest)
	} else {
		m, ok = s.meta.Peek(rec.Manifest.Digest)
	}
	s.metaMu.Unlock()
	if ok {
		if m.Manifest.Config.Digest != rec.ID {
			return nil, fmt.Errorf("image %s: manifest %s names config %s", rec.ID, rec.Manifest.Digest, m.Manifest.Config.Digest)
		}
		return m, nil
	}
	mb, err := s.ReadBlob(rec.Manifest.Digest, MaxManifestSize)
	if err != nil {
		return nil, fmt.Errorf("image %s: manifest: %w", rec.ID, err)
	}
	m = &ImageMeta{}
	if err := json.Unmarshal(mb, &m.Manifest); err != nil {
		return nil, fmt.Errorf("image %s: parse manifest %s: %w", rec.ID, rec.Manifest.Digest, err)
	}
	if m.Manifest.Config.Digest != rec.ID {
		return nil, fmt.Errorf("image %s: manifest %s names config %s", rec.ID, rec.Manifest.Digest, m.Manifest.Config.Digest)
	}
	m.RawConfig, err = s.ReadBlob(rec.ID, MaxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", rec.ID, err)
	}
	m.Config, err = ParseImageConfig(m.RawConfig)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", rec.ID, err)
	}
	for _, ld := range m.Manifest.Layers {
		m.Size += ld.Size
	}
	if fill {
		s.metaMu.Lock()
		s.meta.Add(rec.Manifest.Digest, m)
		s.metaMu.Unlock()
	}
	return m, nil
}

// ReadIndex reads and parses the stored index d.
func (s *Store) ReadIndex(d digest.Digest) (*ocispec.Index, error) {
	b, err := s.ReadBlob(d, MaxManifestSize)
	if err != nil {
		return nil, err
	}
	var idx ocispec.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("parse index %s: %w", d, err)
	}
	return &idx, nil
}

package testregistry

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CorruptBlob flips every byte of a stored blob in place (same length), so the
// registry serves content that no longer matches its digest: clients must
// notice. Works on the filesystem driver's layout
// (storage/docker/registry/v2/blobs/sha256/ab/abcd…/data).
func (r *Registry) CorruptBlob(dgst string) error {
	algo, hex, ok := strings.Cut(dgst, ":")
	if !ok || len(hex) < 2 {
		return fmt.Errorf("testregistry: bad digest %q", dgst)
	}
	path := filepath.Join(r.Dir, "storage", "docker", "registry", "v2", "blobs", algo, hex[:2], hex, "data")
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("testregistry: corrupt %s: %w", dgst, err)
	}
	for i := range b {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("testregistry: corrupt %s: %w", dgst, err)
	}
	return nil
}

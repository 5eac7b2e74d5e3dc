package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/internal/decompress"
)

// testBombLimit: 64 KiB of slack, ratio 128, so that bombs of a few MiB
// exercise the same code as real ones of many GiB.
var testBombLimit = decompress.Limit{Slack: 64 << 10, Ratio: 128}

// tarOf is a tar holding one file name of size bytes from src.
func tarOf(t *testing.T, name string, size int64, src io.Reader) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, src, size); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func assertBombRefused(t *testing.T, s *Archiver, err error) {
	t.Helper()
	if err == nil || !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "decompression bomb") {
		t.Fatalf("err = %v, want an InvalidArgument decompression bomb", err)
	}
	ents, _ := os.ReadDir(filepath.Join(s.st.Root(), "ingest"))
	if len(ents) != 0 {
		t.Fatalf("ingest not cleaned: %d files", len(ents))
	}
	if s.st.Count() != 0 {
		t.Fatalf("%d images stored", s.st.Count())
	}
}

func TestImportRefusesDecompressionBomb(t *testing.T) {
	s, _ := newLocalTestStore(t)
	s.bombLimit = testBombLimit
	bomb := graphtest.Gzip(t, tarOf(t, "zeros", 4<<20, zeros{})) // ≈ 4 KiB → 4 MiB
	err := s.ImportImage(context.Background(), bytes.NewReader(bomb), types.ImportOptions{Repo: "bomb:1"}, discardProgress)
	assertBombRefused(t, s, err)

	// Real data passes at a size well past the slack: ratio ≈ 1.
	real := graphtest.Gzip(t, tarOf(t, "random", 512<<10, rand.Reader))
	if err := s.ImportImage(context.Background(), bytes.NewReader(real), types.ImportOptions{Repo: "real:1"}, discardProgress); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesCompressedArchiveBomb(t *testing.T) {
	s, _ := newLocalTestStore(t)
	s.bombLimit = testBombLimit
	// A docker-save archive whose one layer is 4 MiB of zeros, gzipped as
	// a whole: expanding it would stage 4 MiB on disk.
	inner := tarOf(t, "layer.tar", 4<<20, zeros{})
	err := s.LoadImage(context.Background(), bytes.NewReader(graphtest.Gzip(t, inner)), true, nil, discardProgress)
	assertBombRefused(t, s, err)
}

func TestLoadRefusesGzipLayerBombWhenComputingDiffID(t *testing.T) {
	s, _ := newLocalTestStore(t)
	s.bombLimit = testBombLimit
	layerTar := tarOf(t, "zeros", 4<<20, zeros{})
	layer := graphtest.Gzip(t, layerTar)
	cfg, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest.FromBytes(layerTar).String()}},
	})
	manifest, _ := json.Marshal([]map[string]any{{"Config": "cfg.json", "RepoTags": []string{"bomb:1"}, "Layers": []string{"layer.tar.gz"}}})
	archive := graphtest.Tar(t, graphtest.TarEntry{Name: "cfg.json", Body: string(cfg)}, graphtest.TarEntry{Name: "layer.tar.gz", Body: string(layer)},
		graphtest.TarEntry{Name: "manifest.json", Body: string(manifest)})
	err := s.LoadImage(context.Background(), bytes.NewReader(archive), true, nil, discardProgress)
	assertBombRefused(t, s, err)

	// The same archive under the default limit loads (the DiffID matches).
	s2, _ := newLocalTestStore(t)
	if err := s2.LoadImage(context.Background(), bytes.NewReader(archive), true, nil, discardProgress); err != nil {
		t.Fatal(err)
	}
}

var discardProgress = types.ProgressFunc(func(jsonstream.Message) error { return nil })

package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"github.com/wharfproject/wharf/api/server"
	"github.com/wharfproject/wharf/graph"
)

// indexFlusher is the store's on-demand index.json write (graph/store
// FlushIndex): the background writer keeps the file ≤ 1 s behind the
// records, this makes it current now.
type indexFlusher interface {
	FlushIndex() error
}

var _ indexFlusher = (*graph.Service)(nil)

// ociIndexFile is the layout's index, at the data-root's top (the OCI
// image-layout spec fixes the name).
const ociIndexFile = "index.json"

// maxIndexJSON caps the index.json read back to count its entries: one
// entry is ~300 bytes, so 256 MiB is ~800,000 references, far above any
// store this daemon is sized for (50,000 images).
const maxIndexJSON = 256 << 20

// SystemExportIndex implements server.SystemBackend
// (POST /wharf/system/export-index).
func (d *Daemon) SystemExportIndex(ctx context.Context) (*server.ExportIndexReport, error) {
	f, ok := d.images.(indexFlusher)
	if !ok {
		return nil, fmt.Errorf("export-index: this store keeps no index.json: %w", errdefs.ErrNotImplemented)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := f.FlushIndex(); err != nil {
		return nil, fmt.Errorf("export-index: %w", err)
	}
	p, err := filepath.Abs(filepath.Join(d.cfg.Root, ociIndexFile))
	if err != nil {
		return nil, err
	}
	n, err := countIndexEntries(p)
	if err != nil {
		return nil, fmt.Errorf("export-index: %w", err)
	}
	return &server.ExportIndexReport{Path: p, Entries: n}, nil
}

// countIndexEntries reads index.json as an OCI tool would. The background
// writer may have replaced it since the flush (atomically, with a newer
// state): the count is that of the file a reader finds now.
func countIndexEntries(p string) (int, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var idx struct {
		Manifests []json.RawMessage `json:"manifests"`
	}
	b, err := io.ReadAll(io.LimitReader(f, maxIndexJSON+1))
	if err != nil {
		return 0, err
	}
	if len(b) > maxIndexJSON {
		return 0, fmt.Errorf("%s is larger than %d bytes", p, maxIndexJSON)
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return 0, fmt.Errorf("read %s: %w", p, err)
	}
	return len(idx.Manifests), nil
}

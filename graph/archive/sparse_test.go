package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/safetar"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// A load whose blob entry is a sparse file declaring 64 MiB is refused at
// its header, and nothing stays behind.
func TestLoadRefusesSparseEntry(t *testing.T) {
	s, _ := newLocalTestStore(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "oci-layout", Size: 30, Mode: 0o644})
	tw.Write([]byte(`{"imageLayoutVersion":"1.0.0"}`))
	tw.Flush()
	buf.Write(testregistry.SparseTarEntry("blobs/sha256/"+digest.FromString("x").Encoded(), 64<<20, []byte("x")))
	tw.Close()
	_, err := loadBytes(t, s, buf.Bytes())
	if !errors.Is(err, safetar.ErrSparse) || !errdefs.IsInvalidArgument(err) {
		t.Fatalf("err = %v, want ErrSparse (InvalidArgument)", err)
	}
	assertNoBlobs(t, s)
}

// An import stores the stream as sent and never reads an entry's data,
// so a sparse entry is neither expanded nor refused.
func TestImportKeepsSparseEntryUnexpanded(t *testing.T) {
	s, _ := newLocalTestStore(t)
	var buf bytes.Buffer
	buf.Write(testregistry.SparseTarEntry("big", 64<<20, []byte("x")))
	tw := tar.NewWriter(&buf)
	tw.Close()
	if err := s.ImportImage(context.Background(), bytes.NewReader(buf.Bytes()), types.ImportOptions{Repo: "sparse", Tag: "1"}, types.DiscardProgress); err != nil {
		t.Fatal(err)
	}
	_, cfg := imageConfig(t, s, "sparse:1")
	if got := cfg.RootFS.DiffIDs[0]; got != digest.FromBytes(buf.Bytes()) {
		t.Fatalf("diff id %s, want the stream's %s", got, digest.FromBytes(buf.Bytes()))
	}
}

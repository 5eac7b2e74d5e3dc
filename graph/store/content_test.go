package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestWriteBlobVerifiesSizeAndDigest(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	lease := s.NewLease()
	defer lease.Release()
	data := []byte("hello blob")
	good := ocispec.Descriptor{Digest: digest.FromBytes(data), Size: int64(len(data))}
	other := digest.FromString("other")
	tests := []struct {
		name    string
		desc    ocispec.Descriptor
		body    []byte
		wantErr error
	}{
		{"ok", good, data, nil},
		{"short body", ocispec.Descriptor{Digest: digest.FromString("short"), Size: 6}, []byte("short"), errdefs.ErrInvalidArgument},
		{"long body", ocispec.Descriptor{Digest: digest.FromBytes(data[:4]), Size: 4}, data, errdefs.ErrInvalidArgument},
		{"wrong digest", ocispec.Descriptor{Digest: other, Size: int64(len(data))}, data, errdefs.ErrInvalidArgument},
		{"traversal digest", ocispec.Descriptor{Digest: "sha256:../../x", Size: 1}, []byte("x"), errdefs.ErrInvalidArgument},
		{"short hex", ocispec.Descriptor{Digest: "sha256:abcd", Size: 1}, []byte("x"), errdefs.ErrInvalidArgument},
		{"unknown algorithm", ocispec.Descriptor{Digest: "md5:d41d8cd98f00b204e9800998ecf8427e", Size: 1}, []byte("x"), errdefs.ErrInvalidArgument},
		{"upper hex", ocispec.Descriptor{Digest: digest.Digest(strings.ToUpper(string(digest.FromString("x")))), Size: 1}, []byte("x"), errdefs.ErrInvalidArgument},
		{"negative size", ocispec.Descriptor{Digest: digest.FromString("y"), Size: -1}, []byte("y"), errdefs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := lease.WriteBlob(ctx, tt.desc, bytes.NewReader(tt.body))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("WriteBlob: %v", err)
				}
				got, err := s.ReadBlob(tt.desc.Digest, 1<<20)
				if err != nil || !bytes.Equal(got, tt.body) {
					t.Fatalf("ReadBlob = %q, %v", got, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("WriteBlob err = %v, want %v", err, tt.wantErr)
			}
			if tt.desc.Digest.Validate() == nil && s.HasBlob(tt.desc.Digest) {
				t.Fatalf("rejected blob %s is visible", tt.desc.Digest)
			}
		})
	}
	// Nothing but the accepted blob reached blobs/ and nothing is left in ingest/.
	ents, _ := os.ReadDir(filepath.Join(s.root, ingestDir))
	if len(ents) != 0 {
		t.Fatalf("ingest not empty: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(s.root, "x")); err == nil {
		t.Fatal("traversal digest created a file outside blobs/")
	}
}

func TestWriteBlobExistingDrainsNothing(t *testing.T) {
	s := newTestStore(t)
	lease := s.NewLease()
	defer lease.Release()
	data := []byte("abc")
	if _, created := writeTestBlob(t, lease, "", data); !created {
		t.Fatal("first write: not created")
	}
	d := ocispec.Descriptor{Digest: digest.FromBytes(data), Size: 3}
	r := bytes.NewReader(data)
	// A second lease: the blob exists, so nothing is read and nothing created.
	l2 := s.NewLease()
	defer l2.Release()
	if created, err := l2.WriteBlob(context.Background(), d, r); err != nil || created {
		t.Fatalf("second write: created=%v %v", created, err)
	}
	if r.Len() != 3 {
		t.Fatalf("second write read %d bytes", 3-r.Len())
	}
}

func TestWriteBlobConcurrentWritersOfOneBlob(t *testing.T) {
	s := newTestStore(t)
	data := bytes.Repeat([]byte("0123456789"), 100000)
	d := ocispec.Descriptor{Digest: digest.FromBytes(data), Size: int64(len(data))}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		lease := s.NewLease()
		defer lease.Release()
		go func() {
			defer wg.Done()
			_, err := lease.WriteBlob(context.Background(), d, bytes.NewReader(data))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ReadBlob(d.Digest, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadBlob: %v", err)
	}
}

func TestReadBlobCapAndMissing(t *testing.T) {
	s := newTestStore(t)
	lease := s.NewLease()
	defer lease.Release()
	d, _ := writeTestBlob(t, lease, "", []byte("0123456789"))
	if _, err := s.ReadBlob(d.Digest, 9); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("over cap: %v", err)
	}
	if _, err := s.ReadBlob(digest.FromString("nope"), 9); !errdefs.IsNotFound(err) {
		t.Fatalf("missing: %v", err)
	}
	rc, n, err := s.OpenBlob(d.Digest)
	if err != nil || n != 10 {
		t.Fatalf("OpenBlob: %d %v", n, err)
	}
	rc.Close()
}

func TestStartCleansIngestAndWritesLayout(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	stray := filepath.Join(root, ingestDir, "blob-123")
	if err := os.WriteFile(stray, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.Close()
	openTestStore(t, root)
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("stray ingest file survived restart: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(root, "oci-layout"))
	if err != nil || !strings.Contains(string(b), `"imageLayoutVersion":"1.0.0"`) {
		t.Fatalf("oci-layout = %s, %v", b, err)
	}
}

func TestSecondStoreOnSameRootRefused(t *testing.T) {
	root := t.TempDir()
	openTestStore(t, root)
	_, err := Open(context.Background(), Options{Root: root})
	if !errdefs.IsUnavailable(err) {
		t.Fatalf("second open: %v", err)
	}
}

// A Verified write trusts its reader for the digest (the reader fails in
// place of EOF on a mismatch) but still checks the size, caps the read and
// stores nothing when the reader fails.
func TestWriteVerifiedBlob(t *testing.T) {
	s := newTestStore(t)
	lease := s.NewLease()
	defer lease.Release()
	ctx := context.Background()
	data := []byte("layer bytes")
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(data), Size: int64(len(data))}

	// The reader reports a mismatch at the end: nothing stored.
	mismatch := io.MultiReader(bytes.NewReader(data), iotest.ErrReader(errors.New("digest mismatch")))
	if _, err := lease.WriteBlob(ctx, desc, mismatch, Verified()); err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Fatalf("failing reader: %v", err)
	}
	// Longer or shorter than announced: refused.
	for _, body := range [][]byte{append(append([]byte{}, data...), 'x'), data[:3]} {
		if _, err := lease.WriteBlob(ctx, desc, bytes.NewReader(body), Verified()); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("%d bytes for %d: %v", len(body), desc.Size, err)
		}
	}
	if s.HasBlob(desc.Digest) {
		t.Fatal("a failed write left the blob")
	}
	created, err := lease.WriteBlob(ctx, desc, bytes.NewReader(data), Verified())
	if err != nil || !created {
		t.Fatalf("created %v, %v", created, err)
	}
	got, err := s.ReadBlob(desc.Digest, 1<<10)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("stored %q, %v", got, err)
	}
}

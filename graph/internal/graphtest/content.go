package graphtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
)

// TarEntry is one entry of a Tar. Typeflag defaults to a regular file;
// only regular files carry Body.
type TarEntry struct {
	Name     string
	Body     string
	Typeflag byte
	Linkname string
}

// Tar is a tar archive of entries, in order (mode 0644, directories 0755,
// modification time the Unix epoch).
func Tar(t testing.TB, entries ...TarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.Name, Mode: 0o644, Size: int64(len(e.Body)), Typeflag: e.Typeflag, Linkname: e.Linkname, ModTime: time.Unix(0, 0)}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		if hdr.Typeflag == tar.TypeDir {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Gzip compresses b at the best compression.
func Gzip(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Importer imports a rootfs tarball as an image (graph's Store, archive's
// Archiver).
type Importer interface {
	ImportImage(ctx context.Context, src io.Reader, opts types.ImportOptions, out types.ProgressWriter) error
}

// ImportImage imports a one-file rootfs (etc/hello holding content, which
// makes the layer unique) tagged repo (may be empty) with the Dockerfile
// changes, and returns the image ID.
func ImportImage(t testing.TB, s Importer, repo, content string, changes ...string) digest.Digest {
	t.Helper()
	var id string
	out := types.ProgressFunc(func(m jsonstream.Message) error { id = m.Status; return nil })
	rootfs := Tar(t, TarEntry{Name: "etc/", Typeflag: tar.TypeDir}, TarEntry{Name: "etc/hello", Body: content})
	if err := s.ImportImage(context.Background(), bytes.NewReader(rootfs), types.ImportOptions{Repo: repo, Changes: changes, Message: "test import"}, out); err != nil {
		t.Fatalf("ImportImage(%s): %v", repo, err)
	}
	return digest.Digest(id)
}

// WriteBlob stores b as a blob of media type mt under lease.
func WriteBlob(t testing.TB, lease *store.Lease, mt string, b []byte) ocispec.Descriptor {
	t.Helper()
	d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
	if _, err := lease.WriteBlob(context.Background(), d, bytes.NewReader(b)); err != nil {
		t.Fatalf("WriteBlob(%s): %v", d.Digest, err)
	}
	return d
}

// WriteJSON stores v, marshalled, as a blob of media type mt under lease.
func WriteJSON(t testing.TB, lease *store.Lease, mt string, v any) ocispec.Descriptor {
	t.Helper()
	return WriteBlob(t, lease, mt, []byte(JSONText(t, v)))
}

// JSONText is v marshalled.
func JSONText(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

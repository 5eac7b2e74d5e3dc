package ocilayout

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestIndexWriterIsMarshal: the streamed index.json is json.Marshal's.
func TestIndexWriterIsMarshal(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
		idx.SchemaVersion = 2
		var b bytes.Buffer
		iw, err := NewIndexWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString(strings.Repeat("x", i)), Size: int64(i), Annotations: map[string]string{ocispec.AnnotationRefName: "t"}}
			idx.Manifests = append(idx.Manifests, d)
			if err := iw.Add(d); err != nil {
				t.Fatal(err)
			}
		}
		if err := iw.Close(); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(idx)
		if !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("%d entries:\n got %s\nwant %s", n, b.Bytes(), want)
		}
	}
}

func TestParseBlobPath(t *testing.T) {
	d := digest.FromString("a")
	if got, ok := ParseBlobPath(BlobPath(d)); !ok || got != d {
		t.Fatalf("ParseBlobPath(BlobPath(%s)) = %s, %v", d, got, ok)
	}
	for _, name := range []string{"blobs/", "blobs/sha256", "blobs/sha256/abc", "blobs/sha256/" + d.Encoded() + "/x", "x/sha256/" + d.Encoded(), "blobs/md5/" + d.Encoded()} {
		if _, ok := ParseBlobPath(name); ok {
			t.Errorf("ParseBlobPath(%q) took it", name)
		}
	}
}

// TestWriterRoundTrip: what Writer writes, Reader reads back, and a blob
// shorter than its size is an error.
func TestWriterRoundTrip(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, time.Unix(0, 0), tar.FormatPAX)
	blob := []byte("hello")
	d := digest.FromBytes(blob)
	if err := w.Layout(); err != nil {
		t.Fatal(err)
	}
	if err := w.Blob(context.Background(), d, int64(len(blob)), bytes.NewReader(blob)); err != nil {
		t.Fatal(err)
	}
	if err := w.Index(ocispec.Index{Manifests: []ocispec.Descriptor{{Digest: d, Size: 5}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&b)
	var names []string
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		switch h.Name {
		case LayoutFile:
			if err := ReadLayoutFile(r); err != nil {
				t.Fatal(err)
			}
		case IndexFile:
			idx, err := ReadIndex(r, h.Size, 1<<20)
			if err != nil || len(idx.Manifests) != 1 {
				t.Fatalf("index: %v %v", idx, err)
			}
		}
	}
	if strings.Join(names, " ") != "oci-layout "+BlobPath(d)+" index.json" {
		t.Fatalf("entries %v", names)
	}
	w = NewWriter(io.Discard, time.Unix(0, 0), tar.FormatPAX)
	if err := w.Blob(context.Background(), d, 6, bytes.NewReader(blob)); err == nil {
		t.Fatal("a blob shorter than its size was written")
	}
}

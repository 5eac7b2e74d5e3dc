package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/testregistry"
	"github.com/wharfproject/wharf/registry/referrers"
	"github.com/wharfproject/wharf/trust"
)

// signatureFlood pushes an image to a registry with the referrers API and,
// referring to it, one bundle manifest per entry of layers (each layer's
// bytes as given). It returns the subject's repository and digest.
func signatureFlood(t *testing.T, layers [][][]byte) (*Repository, *referrerDst, ocispec.Descriptor) {
	t.Helper()
	ctx := context.Background()
	d := newReferrerDst(t, true, false)
	cl := &testregistry.Client{Base: d.srv.URL}
	img, err := testregistry.NewImage(testregistry.ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.PushImage(ctx, "dst/app", "1", img); err != nil {
		t.Fatal(err)
	}
	subject := img.Manifest.Descriptor()
	subject.MediaType = ocispec.MediaTypeImageManifest
	empty := testregistry.NewBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"))
	if err := cl.PutBlob(ctx, "dst/app", empty); err != nil {
		t.Fatal(err)
	}
	const bundle = artifactTypeSigstoreBundle + ".v0.3+json"
	for _, ls := range layers {
		m := ocispec.Manifest{ArtifactType: bundle, Config: empty.Descriptor(), Subject: &subject}
		for _, l := range ls {
			b := testregistry.NewBlob(bundle, l)
			if err := cl.PutBlob(ctx, "dst/app", b); err != nil {
				t.Fatal(err)
			}
			m.Layers = append(m.Layers, b.Descriptor())
		}
		desc, body := manifestBlob(t, m)
		if err := cl.PutManifest(ctx, "dst/app", desc.Digest.String(), testregistry.NewBlob(desc.MediaType, body)); err != nil {
			t.Fatal(err)
		}
	}
	return d.repo(t, testService(t, ServiceOptions{})), d, subject
}

// The bounds of a signature look-up (registry/referrers).
const (
	artifactTypeSigstoreBundle = referrers.ArtifactTypeSigstoreBundle
	maxSignatures              = referrers.MaxSignatures
	maxSignatureBytes          = referrers.MaxSignatureBytes
	maxSignaturePayload        = referrers.MaxSignaturePayload
)

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func distinct(t *testing.T, n, size int) [][]byte {
	var out [][]byte
	for i := 0; i < n; i++ {
		out = append(out, randomBytes(t, size))
	}
	return out
}

// A walk reads one payload per signature handed out, no more: stopping
// after the first reads one; walking on stops at maxSignatures.
func TestSignatureSetStopsAtTheCount(t *testing.T) {
	repo, d, subject := signatureFlood(t, [][][]byte{distinct(t, 16, 512), distinct(t, 16, 512), distinct(t, 16, 512)})
	ctx := context.Background()
	set, err := repo.Signatures(ctx, subject.Digest)
	if err != nil || set.Len() != 3 {
		t.Fatalf("listed %v: %v", set, err)
	}
	before := d.count("GET /v2/dst/app/blobs/")
	n := 0
	if err := set.Each(ctx, func(trust.Artifact) bool { n++; return false }); err != nil || n != 1 {
		t.Fatalf("stop at first: %d, %v", n, err)
	}
	if got := d.count("GET /v2/dst/app/blobs/") - before; got != 1 {
		t.Errorf("stop at first: %d payload GETs, want 1", got)
	}
	n = 0
	err = set.Each(ctx, func(a trust.Artifact) bool {
		n++
		if a.Subject != subject.Digest || a.Format != trust.FormatSigstoreBundle || len(a.Payload) != 512 {
			t.Errorf("artifact %+v", a)
		}
		return true
	})
	if !errors.Is(err, trust.ErrSignatureLimit) || n != maxSignatures || !strings.Contains(err.Error(), "more than 32") {
		t.Errorf("walk on: %d signatures, %v; want %d and ErrSignatureLimit", n, err, maxSignatures)
	}
	if got := d.count("GET /v2/dst/app/blobs/") - before; got > maxSignatures {
		t.Errorf("walk on: %d payload GETs, want ≤ %d", got, maxSignatures)
	}
}

// Payloads of 1 MiB: the fifth passes maxSignatureBytes and is not read.
func TestSignatureSetStopsAtTheBytes(t *testing.T) {
	repo, d, subject := signatureFlood(t, [][][]byte{distinct(t, 6, maxSignaturePayload)})
	ctx := context.Background()
	set, err := repo.Signatures(ctx, subject.Digest)
	if err != nil {
		t.Fatal(err)
	}
	before := d.count("GET /v2/dst/app/blobs/")
	n := 0
	err = set.Each(ctx, func(trust.Artifact) bool { n++; return true })
	if !errors.Is(err, trust.ErrSignatureLimit) || n != maxSignatureBytes/maxSignaturePayload || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("%d signatures, %v", n, err)
	}
	if got := d.count("GET /v2/dst/app/blobs/") - before; got != n {
		t.Errorf("%d payload GETs for %d signatures", got, n)
	}
}

// The same bundle bytes in two manifests are handed out once.
func TestSignatureSetDropsRepeatedBundles(t *testing.T) {
	same := distinct(t, 2, 256)
	repo, _, subject := signatureFlood(t, [][][]byte{same, append([][]byte{randomBytes(t, 256)}, same...)})
	set, err := repo.Signatures(context.Background(), subject.Digest)
	if err != nil || set.Len() != 2 {
		t.Fatalf("listed %v: %v", set, err)
	}
	seen := map[string]int{}
	if err := set.Each(context.Background(), func(a trust.Artifact) bool { seen[string(a.Payload)]++; return true }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Errorf("%d distinct payloads handed out, want 3", len(seen))
	}
	for _, n := range seen {
		if n != 1 {
			t.Errorf("a payload handed out %d times", n)
		}
	}
}

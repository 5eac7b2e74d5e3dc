package graph

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
)

// FuzzReferenceParsing feeds client-supplied names to tag creation (repo,
// tag) and to graph's lookup. Nothing may panic; an accepted tag must print
// as a reference that parses back to itself; errors are classified (a 400
// or 404, never a 500). (graph/store's FuzzReferenceParsing covers the
// store's normalisation and lookup.)
func FuzzReferenceParsing(f *testing.F) {
	for _, seed := range [][2]string{
		{"busybox", "latest"}, {"docker.io/library/busybox:1.36", ""}, {"localhost:5000/a/b", "v1"},
		{"UPPER", "x"}, {"a::b", ""}, {"sha256", "x"}, {"a@sha256:" + strings.Repeat("0", 64), ""},
		{"sha256:" + strings.Repeat("a", 64), ""}, {"[::1]:5000/x", "t"}, {strings.Repeat("a/", 200) + "b", ""},
		{"a", strings.Repeat("t", 129)}, {"", ""}, {"a\x00b", ""}, {"ex.com/a_b__c", "-x"},
	} {
		f.Add(seed[0], seed[1])
	}
	s, _ := newLocalTestStore(f)
	importTestImage(f, s, "fuzz/ref:1", "fuzz")
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, repo, tag string) {
		if ref, err := store.ParseNewTag(repo, tag); err == nil {
			again, err := store.ParseNewTag(ref.String(), "")
			if err != nil || again.String() != ref.String() {
				t.Fatalf("store.ParseNewTag(%q, %q) = %s, which reparses as %v, %v", repo, tag, ref, again, err)
			}
			if n, err := store.NormaliseRefs([]string{ref.String()}, false); err != nil || n[0] != ref.String() {
				t.Fatalf("the store normalises the tag %s as %v, %v", ref, n, err)
			}
		} else if !errdefs.IsInvalidArgument(err) {
			t.Fatalf("store.ParseNewTag(%q, %q): unclassified error %v", repo, tag, err)
		}
		if _, err := s.Lookup(ctx, repo); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsInvalidArgument(err) {
			t.Fatalf("Lookup(%q): unclassified error %v", repo, err)
		}
	})
}

// FuzzDecodeManifestOrIndex: bytes stored as a blob and then read by load
// as an index (pickManifest) or a manifest (checkManifest) never panic and
// fail with an error, never a record naming unstored blobs.
func FuzzDecodeManifestOrIndex(f *testing.F) {
	s, _ := newLocalTestStore(f)
	id := importTestImage(f, s, "fuzz/man:1", "man")
	rec, err := s.Lookup(context.Background(), id.String())
	if err != nil {
		f.Fatal(err)
	}
	good, err := s.st.ReadBlob(rec.Manifest.Digest, store.MaxManifestSize)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + rec.Manifest.Digest.String() + `","size":1,"platform":{"os":"linux","architecture":"amd64"}}]}`))
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"digest":"` + rec.Manifest.Digest.String() + `","size":` + strconv.Itoa(len(good)) + `}]}`))
	f.Add([]byte(`{"schemaVersion":2,"config":{"digest":"sha256:../../x"},"layers":[{"digest":"sha512:0"}],"manifests":[{}]}`))
	f.Add([]byte(`{"config":{"digest":"` + id.String() + `"},"layers":null}`))
	f.Add([]byte(`[]`))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, b []byte) {
		lease := s.st.NewLease()
		defer lease.Release()
		arc := &loadArchive{lease: lease}
		d := digest.FromBytes(b)
		desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d, Size: int64(len(b))}
		if _, err := lease.WriteBlob(ctx, desc, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		if m, err := s.pickManifest(arc, d, localTestPlatform()); err == nil && !s.HasBlob(m.Digest) {
			t.Fatalf("pickManifest chose unstored %s", m.Digest)
		}
		if r, err := s.checkManifest(ctx, arc, desc); err == nil {
			for _, bd := range []digest.Digest{r.ID, r.Manifest.Digest} {
				if !s.HasBlob(bd) {
					t.Fatalf("checkManifest accepted a record naming unstored %s", bd)
				}
			}
		}
	})
}

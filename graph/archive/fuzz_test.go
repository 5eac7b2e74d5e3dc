package archive

import (
	"context"
	"strconv"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

// FuzzDecodeManifestOrIndex: bytes stored as a blob and then read by load
// as an index (pickManifest) or a manifest (checkManifest) never panic and
// fail with an error, never a record naming unstored blobs.
func FuzzDecodeManifestOrIndex(f *testing.F) {
	s, _ := newLocalTestStore(f)
	id := graphtest.ImportImage(f, s, "fuzz/man:1", "man")
	rec, err := s.st.Lookup(id.String())
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
		desc := graphtest.WriteBlob(t, lease, ocispec.MediaTypeImageManifest, b)
		d := desc.Digest
		if m, err := s.pickManifest(arc, d, graphtest.Platform()); err == nil && !s.st.HasBlob(m.Digest) {
			t.Fatalf("pickManifest chose unstored %s", m.Digest)
		}
		if r, err := s.checkManifest(ctx, arc, desc); err == nil {
			for _, bd := range []digest.Digest{r.ID, r.Manifest.Digest} {
				if !s.st.HasBlob(bd) {
					t.Fatalf("checkManifest accepted a record naming unstored %s", bd)
				}
			}
		}
	})
}

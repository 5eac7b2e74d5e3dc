package graph

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// FuzzReferenceParsing feeds client-supplied names to every parser that
// takes one: tag creation (repo, tag), lookup (name, ID prefix, digest
// reference) and the normalisation of stored references. Nothing may panic;
// an accepted tag must print as a reference that parses back to itself;
// errors are classified (a 400 or 404, never a 500).
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
		if ref, err := parseNewTag(repo, tag); err == nil {
			again, err := parseNewTag(ref.String(), "")
			if err != nil || again.String() != ref.String() {
				t.Fatalf("parseNewTag(%q, %q) = %s, which reparses as %v, %v", repo, tag, ref, again, err)
			}
		} else if !errdefs.IsInvalidArgument(err) {
			t.Fatalf("parseNewTag(%q, %q): unclassified error %v", repo, tag, err)
		}
		for _, canonical := range []bool{false, true} {
			_, _ = normaliseRefs([]string{repo}, canonical)
		}
		if _, err := s.Lookup(ctx, repo); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsInvalidArgument(err) {
			t.Fatalf("Lookup(%q): unclassified error %v", repo, err)
		}
	})
}

// FuzzCheckIndexFile: whatever index.json holds, the check reports (does
// not panic on) it, and finds no problem only when it matches the records.
func FuzzCheckIndexFile(f *testing.F) {
	s, _ := newLocalTestStore(f)
	importTestImage(f, s, "fuzz/idx:1", "idx")
	good, err := os.ReadFile(filepath.Join(s.local.root, indexFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"schemaVersion":2,"manifests":[]}`))
	f.Add([]byte(`{"manifests":[{"digest":"sha256:../../x","annotations":{"io.containerd.image.name":"x"}}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(s.local.root, indexFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := s.Check(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			if p.Kind != ProblemIndex || p.Message == "" {
				t.Fatalf("unexpected problem %+v", p)
			}
		}
	})
}

// FuzzDecodeManifestOrIndex: bytes stored as a blob and then read as an
// index (pickManifest), a manifest (checkManifest) or an image's manifest
// (metaFor, which the check and inspect use) never panic and fail with a
// classified error or an ordinary one, never a record naming unstored blobs.
func FuzzDecodeManifestOrIndex(f *testing.F) {
	s, _ := newLocalTestStore(f)
	id := importTestImage(f, s, "fuzz/man:1", "man")
	rec, err := s.Lookup(context.Background(), id.String())
	if err != nil {
		f.Fatal(err)
	}
	good, err := s.ReadBlob(rec.Manifest.Digest, maxManifestSize)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + rec.Manifest.Digest.String() + `","size":1,"platform":{"os":"linux","architecture":"amd64"}}]}`))
	f.Add([]byte(`{"schemaVersion":2,"config":{"digest":"sha256:../../x"},"layers":[{"digest":"sha512:0"}],"manifests":[{}]}`))
	f.Add([]byte(`{"config":{"digest":"` + id.String() + `"},"layers":null}`))
	f.Add([]byte(`[]`))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, b []byte) {
		d := digest.FromBytes(b)
		desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d, Size: int64(len(b))}
		if err := s.WriteBlob(ctx, desc, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		_, _ = s.local.pickManifest(d, localTestPlatform())
		if r, err := s.local.checkManifest(desc); err == nil {
			for _, bd := range []digest.Digest{r.ID, r.Manifest.Digest} {
				if !s.HasBlob(bd) {
					t.Fatalf("checkManifest accepted a record naming unstored %s", bd)
				}
			}
		}
		_, _ = s.local.metaFor(&ImageRecord{ID: id, Manifest: desc})
	})
}

package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// FuzzReferenceParsing feeds client-supplied names to the store's parsers:
// lookup (name, ID prefix, digest reference) and the normalisation of
// stored references. Nothing may panic; a normalised reference parses back
// to itself; errors are classified (a 400 or 404, never a 500). (graph's
// FuzzParseNewTag covers tag creation.)
func FuzzReferenceParsing(f *testing.F) {
	for _, seed := range []string{
		"busybox", "docker.io/library/busybox:1.36", "localhost:5000/a/b", "UPPER", "a::b", "sha256",
		"a@sha256:" + strings.Repeat("0", 64), "sha256:" + strings.Repeat("a", 64), "[::1]:5000/x:t",
		strings.Repeat("a/", 200) + "b", "a:" + strings.Repeat("t", 129), "", "a\x00b", "ex.com/a_b__c:-x",
		"a:1@sha256:" + strings.Repeat("0", 64),
	} {
		f.Add(seed)
	}
	s := newTestStore(f)
	putTagged(f, s, "fuzz/ref:1", "fuzz")
	f.Fuzz(func(t *testing.T, name string) {
		for _, canonical := range []bool{false, true} {
			out, err := NormaliseRefs([]string{name}, canonical)
			if err != nil {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("NormaliseRefs(%q, %v): unclassified error %v", name, canonical, err)
				}
				continue
			}
			n, err := reference.ParseNormalizedNamed(out[0])
			if err != nil || n.String() != out[0] {
				t.Fatalf("NormaliseRefs(%q, %v) = %s, which reparses as %v, %v", name, canonical, out[0], n, err)
			}
		}
		if _, err := s.Lookup(name); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsInvalidArgument(err) {
			t.Fatalf("Lookup(%q): unclassified error %v", name, err)
		}
	})
}

// FuzzCheckIndexFile: whatever index.json holds, the check reports (does
// not panic on) it, and finds no problem only when it matches the records.
func FuzzCheckIndexFile(f *testing.F) {
	s := newTestStore(f)
	putTagged(f, s, "fuzz/idx:1", "idx")
	if err := s.FlushIndex(); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(s.root, IndexFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"schemaVersion":2,"manifests":[]}`))
	f.Add([]byte(`{"manifests":[{"digest":"sha256:../../x","annotations":{"io.containerd.image.name":"x"}}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(s.root, IndexFile), b, 0o600); err != nil {
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

// FuzzDecodeManifest: bytes stored as a blob and then read as an image's
// manifest (Meta, which the check, inspect and collection use) or as an
// index (ReadIndex) never panic; Meta accepts only a manifest naming the
// record's config, and a record over such bytes is checked, and its blobs
// listed, without a panic.
func FuzzDecodeManifest(f *testing.F) {
	s := newTestStore(f)
	rec := putTagged(f, s, "fuzz/man:1", "man")
	id := rec.ID
	good, err := s.ReadBlob(rec.Manifest.Digest, MaxManifestSize)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + rec.Manifest.Digest.String() + `","size":1,"platform":{"os":"linux","architecture":"amd64"}}]}`))
	f.Add([]byte(`{"schemaVersion":2,"config":{"digest":"sha256:../../x"},"layers":[{"digest":"sha512:0"}],"manifests":[{}]}`))
	f.Add([]byte(`{"config":{"digest":"` + id.String() + `"},"layers":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		lease := s.NewLease()
		defer lease.Release()
		desc, _ := writeTestBlob(t, lease, ocispec.MediaTypeImageManifest, b)
		d := desc.Digest
		_, _ = s.ReadIndex(d)
		r := &ImageRecord{ID: id, Target: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: d, Size: desc.Size}, Manifest: desc}
		if m, err := s.Meta(r); err == nil && m.Manifest.Config.Digest != id {
			t.Fatalf("Meta accepted a manifest naming config %s for image %s", m.Manifest.Config.Digest, id)
		}
		_ = s.blobsOf(r)
		s.checkImage(r, func(CheckProblem) {})
	})
}

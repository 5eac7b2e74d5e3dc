package distribution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry"
)

// mapSource is a blobSource over blobs by digest, verifying as the real
// sources do.
type mapSource map[digest.Digest][]byte

func (m mapSource) read(_ context.Context, d ocispec.Descriptor, max int64) ([]byte, error) {
	if d.Size > max {
		return nil, fmt.Errorf("too large%.0w", ErrAttestationTooLarge)
	}
	b, ok := m[d.Digest]
	if !ok {
		return nil, errdefs.ErrNotFound
	}
	return b, verifyBlob(d, b)
}

// attestationsOf collects what attestationsEach hands over: nil for none.
func attestationsOf(ctx context.Context, src blobSource, idx *ocispec.Index, subject digest.Digest, opts types.AttestationOptions) ([]image.AttestationStatement, error) {
	var out []image.AttestationStatement
	err := attestationsEach(ctx, src, idx, subject, opts, func(st image.AttestationStatement) error {
		out = append(out, st)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (m mapSource) add(mt string, b []byte, ann map[string]string) ocispec.Descriptor {
	d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b)), Annotations: ann}
	m[d.Digest] = b
	return d
}

const (
	spdxType       = "https://spdx.dev/Document"
	provenanceType = "https://slsa.dev/provenance/v0.2"
	inTotoLayer    = "application/vnd.in-toto+json"
)

// buildxIndex is an index as buildx writes it: two platform manifests and,
// for the first, an attestation manifest with an SPDX SBOM and a
// provenance statement (and one layer without a predicate type).
func buildxIndex(t *testing.T, src mapSource, sbom, prov []byte) (*ocispec.Index, digest.Digest) {
	t.Helper()
	amd := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("amd64"), Size: 10,
		Platform: &ocispec.Platform{OS: "linux", Architecture: "amd64"}}
	arm := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("arm64"), Size: 10,
		Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"}}
	l1 := src.add(inTotoLayer, sbom, map[string]string{PredicateTypeAnnotation: spdxType})
	l2 := src.add(inTotoLayer, prov, map[string]string{PredicateTypeAnnotation: provenanceType})
	l3 := src.add(inTotoLayer, []byte(`{}`), nil)
	man, _ := json.Marshal(ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest,
		Config: ocispec.Descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digest.FromString("{}"), Size: 2},
		Layers: []ocispec.Descriptor{l1, l2, l3}})
	att := src.add(ocispec.MediaTypeImageManifest, man, map[string]string{
		imagespec.AnnotationReferenceType: imagespec.AttestationManifestType, imagespec.AnnotationReferenceDigest: amd.Digest.String()})
	att.Platform = &ocispec.Platform{OS: "unknown", Architecture: "unknown"}
	return &ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{amd, arm, att}}, amd.Digest
}

func TestAttestationsOf(t *testing.T) {
	ctx := context.Background()
	src := mapSource{}
	sbom := []byte(`{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://spdx.dev/Document","predicate":{"spdxVersion":"SPDX-2.3"}}`)
	prov := []byte(` {"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://slsa.dev/provenance/v0.2"}` + "\n")
	idx, amd := buildxIndex(t, src, sbom, prov)

	all, err := attestationsOf(ctx, src, idx, amd, types.AttestationOptions{})
	if err != nil || len(all) != 2 || all[0].PredicateType != spdxType || all[1].PredicateType != provenanceType {
		t.Fatalf("%+v %v", all, err)
	}
	if all[0].Statement != nil || all[0].Descriptor.Annotations[PredicateTypeAnnotation] != spdxType {
		t.Errorf("without statement=1: %+v", all[0])
	}
	withBodies, err := attestationsOf(ctx, src, idx, amd, types.AttestationOptions{Statement: true, PredicateTypes: []string{provenanceType}})
	if err != nil || len(withBodies) != 1 || withBodies[0].Statement == nil || string(*withBodies[0].Statement) != strings.TrimSpace(string(prov)) {
		t.Fatalf("%+v %v", withBodies, err)
	}
	// The other platform has none; an unknown type matches nothing.
	if got, err := attestationsOf(ctx, src, idx, digest.FromString("arm64"), types.AttestationOptions{}); err != nil || got != nil {
		t.Errorf("arm64: %+v %v", got, err)
	}
	if got, err := attestationsOf(ctx, src, idx, amd, types.AttestationOptions{PredicateTypes: []string{"x"}}); err != nil || got != nil {
		t.Errorf("type x: %+v %v", got, err)
	}
}

// Hostile statements: each a clear error of the upstream class, no panic.
func TestAttestationsOfHostile(t *testing.T) {
	ctx := context.Background()
	sbom := []byte(`{"predicateType":"https://spdx.dev/Document"}`)
	prov := []byte(`{"predicateType":"https://slsa.dev/provenance/v0.2"}`)
	tests := []struct {
		name   string
		mutate func(src mapSource, idx *ocispec.Index)
		want   string
	}{
		{"digest mismatch", func(src mapSource, _ *ocispec.Index) {
			src[digest.FromBytes(sbom)] = []byte(`{"predicateType":"https://spdx.dev/Documenx"}`)
		}, "digest mismatch"},
		{"not JSON", func(src mapSource, idx *ocispec.Index) {
			rewriteStatement(t, src, idx, 0, []byte("not json at all"), 0)
		}, "not a JSON object"},
		{"a JSON array", func(src mapSource, idx *ocispec.Index) {
			rewriteStatement(t, src, idx, 0, []byte("[1,2]"), 0)
		}, "not a JSON object"},
		{"oversized statement", func(src mapSource, idx *ocispec.Index) {
			rewriteStatement(t, src, idx, 0, sbom, maxStatementSize+1)
		}, "more than the 33554432 wharfd reads"},
		{"statements over the answer's bound", func(src mapSource, idx *ocispec.Index) {
			rewriteStatement(t, src, idx, 0, sbom, maxStatementSize)
			rewriteStatement(t, src, idx, 1, prov, maxStatementSize)
			setPredicate(t, src, idx, 2, "https://example.com/one-more")
		}, "more than the 67108864 bytes"},
		{"attestation manifest not a manifest", func(src mapSource, idx *ocispec.Index) {
			b := []byte(`{"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`)
			replaceAttestation(src, idx, b)
		}, "is not an image manifest"},
		{"layer with a bad digest", func(src mapSource, idx *ocispec.Index) {
			b := []byte(`{"layers":[{"digest":"sha256:nope","size":1,"annotations":{"in-toto.io/predicate-type":"x"}}]}`)
			replaceAttestation(src, idx, b)
		}, "invalid digest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := mapSource{}
			idx, amd := buildxIndex(t, src, sbom, prov)
			tc.mutate(src, idx)
			_, err := attestationsOf(ctx, src, idx, amd, types.AttestationOptions{Statement: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if !errors.Is(err, registry.ErrUpstream) {
				t.Errorf("%v is not of the upstream class", err)
			}
		})
	}
}

// rewriteStatement makes layer i of the attestation manifest body, claimed
// size bytes long when size > 0.
func rewriteStatement(t *testing.T, src mapSource, idx *ocispec.Index, i int, body []byte, size int64) {
	t.Helper()
	att := idx.Manifests[2]
	var m ocispec.Manifest
	if err := json.Unmarshal(src[att.Digest], &m); err != nil {
		t.Fatal(err)
	}
	l := src.add(inTotoLayer, body, m.Layers[i].Annotations)
	if size > 0 {
		l.Size = size
	}
	m.Layers[i] = l
	b, _ := json.Marshal(m)
	replaceAttestation(src, idx, b)
}

// setPredicate gives layer i of the attestation manifest a predicate type.
func setPredicate(t *testing.T, src mapSource, idx *ocispec.Index, i int, pt string) {
	t.Helper()
	var m ocispec.Manifest
	if err := json.Unmarshal(src[idx.Manifests[2].Digest], &m); err != nil {
		t.Fatal(err)
	}
	m.Layers[i].Annotations = map[string]string{PredicateTypeAnnotation: pt}
	b, _ := json.Marshal(m)
	replaceAttestation(src, idx, b)
}

func replaceAttestation(src mapSource, idx *ocispec.Index, b []byte) {
	att := idx.Manifests[2]
	d := src.add(att.MediaType, b, att.Annotations)
	d.Platform = att.Platform
	idx.Manifests[2] = d
}

func TestParseAttestationManifest(t *testing.T) {
	good := digest.FromString("a")
	tests := []struct {
		in      string
		layers  int
		wantErr string
	}{
		{`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","layers":[{"digest":"` + good.String() + `","size":1}]}`, 1, ""},
		{`{"layers":[]}`, 0, ""},
		{`{}`, 0, ""},
		{`[]`, 0, "not a manifest"},
		{`nope`, 0, "not a manifest"},
		{`{"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json"}`, 0, "not an image manifest"},
		{`{"layers":[{"digest":"md5:abc","size":1}]}`, 0, "invalid digest"},
		{`{"layers":[{"digest":"` + good.String() + `","size":-1}]}`, 0, "size -1"},
		{`{"layers":[` + strings.Repeat(`{"digest":"`+good.String()+`","size":1},`, maxStatementsPerAttestation) + `{"digest":"` + good.String() + `","size":1}]}`, 0, "more than 1000"},
	}
	for _, tc := range tests {
		layers, err := ParseAttestationManifest([]byte(tc.in))
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%.60s: err %v, want %q", tc.in, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || len(layers) != tc.layers):
			t.Errorf("%.60s: %d layers, %v", tc.in, len(layers), err)
		}
	}
}

func FuzzParseAttestationManifest(f *testing.F) {
	f.Add([]byte(`{"layers":[{"mediaType":"application/vnd.in-toto+json","digest":"` + digest.FromString("a").String() + `","size":1,"annotations":{"in-toto.io/predicate-type":"x"}}]}`))
	f.Add([]byte(`{"mediaType":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		layers, err := ParseAttestationManifest(b)
		if err != nil {
			return
		}
		for _, l := range layers {
			if l.Digest.Validate() != nil || l.Size < 0 {
				t.Fatalf("accepted %+v", l)
			}
		}
		// And the statements it lists are read through the bounds: a
		// source that has none fails cleanly.
		idx := &ocispec.Index{Manifests: []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(b), Size: int64(len(b)),
			Annotations: map[string]string{imagespec.AnnotationReferenceType: imagespec.AttestationManifestType, imagespec.AnnotationReferenceDigest: digest.FromString("s").String()}}}}
		_, _ = attestationsOf(context.Background(), mapSource{digest.FromBytes(b): b}, idx, digest.FromString("s"), types.AttestationOptions{Statement: true})
	})
}

func FuzzStatementJSON(f *testing.F) {
	f.Add([]byte(`{"a":1}`))
	f.Add([]byte(` [ ] `))
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, err := statementJSON(b)
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			t.Fatalf("accepted %q", b)
		}
	})
}

// An index that attaches more attestation manifests to one platform
// manifest than wharfd reads is refused before any is fetched.
func TestAttestationsOfTooManyManifests(t *testing.T) {
	src := mapSource{}
	subject := digest.FromString("subject")
	idx := &ocispec.Index{}
	for i := range maxAttestationManifests + 1 {
		b, _ := json.Marshal(ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Annotations: map[string]string{"n": fmt.Sprint(i)}})
		d := src.add(ocispec.MediaTypeImageManifest, b, map[string]string{
			imagespec.AnnotationReferenceType: imagespec.AttestationManifestType, imagespec.AnnotationReferenceDigest: subject.String()})
		idx.Manifests = append(idx.Manifests, d)
	}
	counting := &countingSource{src: src}
	_, err := attestationsOf(context.Background(), counting, idx, subject, types.AttestationOptions{})
	if err == nil || !errors.Is(err, ErrAttestationTooLarge) || !strings.Contains(err.Error(), "more than 16 attestation manifests") {
		t.Fatalf("err %v", err)
	}
	if counting.n != 0 {
		t.Errorf("%d documents read", counting.n)
	}
}

type countingSource struct {
	src blobSource
	n   int
}

func (c *countingSource) read(ctx context.Context, d ocispec.Descriptor, max int64) ([]byte, error) {
	c.n++
	return c.src.read(ctx, d, max)
}

// The credentials of a local image's attestations are bound once, before
// any origin is asked: to the registry of the name asked for when the image
// came from there, else to its first origin. A set without a server address
// never follows the request to a later origin (a registry tried when the
// first fails, which may be anyone's).
func TestOriginCredentialsBindOnce(t *testing.T) {
	d := digest.FromString("top")
	rec := &store.ImageRecord{RepoDigests: []string{"a.example/app@" + d.String(), "later.example/app@" + d.String(), "other.example/x@" + digest.FromString("x").String()}}
	rec.Target.Digest = d
	sdk := registry.Credentials{Auth: &registrytypes.AuthConfig{Username: "u", Password: "p"}}
	for _, tc := range []struct {
		name, want string
	}{
		{"a.example/app:1", "a.example"},
		{"later.example/app:1", "later.example"},
		{d.String(), "a.example"},        // an ID: the first origin
		{"elsewhere/app:1", "a.example"}, // not an origin: the first origin
	} {
		got := originCredentials(tc.name, rec, sdk)
		for _, host := range []string{"a.example", "later.example", "other.example", "docker.io"} {
			if sent := got.For(host) != nil; sent != (host == tc.want) {
				t.Errorf("%s: credentials for %s: %v, want only %s", tc.name, host, sent, tc.want)
			}
		}
	}
	// A set naming its registry keeps it.
	named := registry.Credentials{Auth: &registrytypes.AuthConfig{Username: "u", ServerAddress: "later.example"}}
	if got := originCredentials("a.example/app:1", rec, named); got.For("a.example") != nil || got.For("later.example") == nil {
		t.Errorf("a set naming later.example was rebound: %+v", got.Auth)
	}
}

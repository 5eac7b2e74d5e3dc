package policy

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/distribution/reference"
	"github.com/wharfproject/wharf/trust"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(evalPolicy))
	f.Add([]byte(`{"default":[{"type":"insecureAcceptAnything"}]}`))
	f.Add([]byte(`{"default":[{"type":"reject"}],"transports":{"docker":{"*.example.com":[{"type":"sigstoreSigned","keyDatas":["QQ=="],"signedIdentity":{"type":"remapIdentity","prefix":"a.example","signedPrefix":"b.example/ns"}}]}}}`))
	f.Add([]byte(`{"default":[{"type":"sigstoreSigned","pki":{"caRootsData":"QQ==","subjectEmail":"e"}}],"transports":{"atomic":{"x":[{"type":"reject"}]}}}`))
	f.Add([]byte(`{"default":[{"type":"notationSigned","trustStore":{"caData":["Tg=="]},"trustedIdentities":["*"],"signatureVerification":{"level":"strict"}}]}`))
	refs := []string{"alpine:3", "open.example/x", "both.example/x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "a.b.example.com:5000/x/y:z", "localhost/a"}
	arts := []trust.Artifact{
		art(1, trust.FormatSigstoreBundle, "A", ""),
		art(2, trust.FormatSimpleSigning, "A", "docker.io/library/alpine:3"),
		art(3, trust.FormatNotation, "N", ""),
	}
	foreign := art(4, trust.FormatSigstoreBundle, "A", "")
	foreign.Subject = dg(9)
	arts = append(arts, foreign)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "/", fakeOptions(nil))
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			return
		}
		q, err := Parse(data, "/", fakeOptions(nil))
		if err != nil || q.Revision() != p.Revision() {
			t.Fatalf("a second parse differs: %v", err)
		}
		for _, r := range refs {
			ref, _ := reference.ParseNormalizedNamed(r)
			img := trust.Image{Reference: ref, Digest: img0}
			v1 := evaluate(t, p, context.Background(), img, arts)
			v2 := evaluate(t, q, context.Background(), img, arts)
			if !reflect.DeepEqual(v1, v2) {
				t.Fatalf("%s: verdicts differ:\n%+v\n%+v", r, v1, v2)
			}
			if v1.Decision != trust.Accepted && v1.Decision != trust.Rejected {
				t.Fatalf("%s: decision %q", r, v1.Decision)
			}
			scope, reqs := p.For(ref)
			if v1.Scope != scope || len(reqs) == 0 {
				t.Fatalf("%s: scope %q vs %q", r, v1.Scope, scope)
			}
			for _, fd := range v1.Findings {
				if fd.Artifact == foreign.Digest && fd.Verified {
					t.Fatal("a foreign referrer verified")
				}
			}
			_ = p.Show(ref)
			_ = p.NeedsSignatures(ref)
		}
	})
}

func FuzzSignedIdentity(f *testing.F) {
	for _, c := range repoDigestOrExactTable {
		f.Add(MatchRepoDigestOrExact, "", c.image, c.sig)
	}
	for _, c := range exactMatchTable {
		f.Add(ExactReference, c.a, "busybox:latest", c.b)
	}
	f.Add(RemapIdentity, "mirror.example", "mirror.example/busybox:1", "public.com/busybox:1")
	f.Add(ExactRepository, "docker.io/library/busybox", "x", "busybox:1")
	f.Fuzz(func(t *testing.T, typ, arg, image, signed string) {
		obj := map[string]string{"type": typ}
		switch typ {
		case ExactReference:
			obj["dockerReference"] = arg
		case ExactRepository:
			obj["dockerRepository"] = arg
		case RemapIdentity:
			obj["prefix"], obj["signedPrefix"] = arg, arg
		}
		raw, _ := json.Marshal(obj)
		id, err := parseIdentity("signedIdentity", raw)
		if err != nil {
			return
		}
		ref, err := reference.ParseNormalizedNamed(image)
		if err != nil {
			ref = nil
		}
		got := id.Matches(ref, signed)
		if got != id.Matches(ref, signed) {
			t.Fatal("not deterministic")
		}
		if ref == nil {
			if got && typ != ExactReference && typ != ExactRepository {
				t.Fatalf("%s matched without an image reference", id)
			}
			return
		}
		repo := Identity{Type: MatchRepository}.Matches(ref, signed)
		exact := Identity{Type: MatchExact}.Matches(ref, signed)
		rdoe := Identity{Type: MatchRepoDigestOrExact}.Matches(ref, signed)
		// matchExact ⊆ matchRepoDigestOrExact ⊆ matchRepository.
		if exact && !rdoe || rdoe && !repo {
			t.Fatalf("image %q, signature %q: exact %v, repoDigestOrExact %v, repository %v", image, signed, exact, rdoe, repo)
		}
		// Remapping a prefix onto itself changes nothing.
		if typ == RemapIdentity && got != rdoe {
			t.Fatalf("remap %s onto itself: %v, matchRepoDigestOrExact %v", arg, got, rdoe)
		}
	})
}

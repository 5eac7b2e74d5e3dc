package sigstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/trust"
)

// fuzzVerifier trusts the fixtures' key and CA, so that a fuzzed input that
// came close to a real signature would be judged by real roots.
func fuzzVerifier(f *testing.F) *Verifier {
	rd := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	ca := append(rd("pki/root.pem"), rd("pki/intermediate.pem")...)
	v, err := New(Config{Keys: [][]byte{rd("keys/signer.pub")}, Fulcio: &Fulcio{CAPEM: ca},
		PKI: &PKI{CARootsPEM: rd("pki/root.pem")}})
	if err != nil {
		f.Fatal(err)
	}
	return v
}

// The image every fuzz input is judged for: no fixture signs it, so nothing
// may verify.
var fuzzImage = trust.Image{Digest: digest.FromString("fuzz")}

func FuzzVerifyBundle(f *testing.F) {
	for _, n := range []string{"key-bundle", "cert-bundle"} {
		b, err := os.ReadFile(filepath.Join("testdata", n, "payload"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle+json;version=0.1"}`))
	v := fuzzVerifier(f)
	f.Fuzz(func(t *testing.T, payload []byte) {
		fd := v.Verify(context.Background(), fuzzImage, trust.Artifact{Format: trust.FormatSigstoreBundle, Payload: payload})
		if fd.Verified || fd.Error == "" {
			t.Fatalf("random input verified: %+v", fd)
		}
	})
}

func FuzzVerifySimpleSigning(f *testing.F) {
	for _, n := range []string{"key-sig", "cert-sig"} {
		p, err := os.ReadFile(filepath.Join("testdata", n, "payload"))
		if err != nil {
			f.Fatal(err)
		}
		fx := &fixtures{dir: "testdata"}
		_, a := fx.artifactF(f, n)
		f.Add(p, a.Annotations[annSignature], a.Annotations[annCertificate], a.Annotations[annChain], "")
	}
	v := fuzzVerifier(f)
	f.Fuzz(func(t *testing.T, payload []byte, sig, cert, chain, bundle string) {
		ann := map[string]string{annSignature: sig, annCertificate: cert, annChain: chain, annBundle: bundle}
		fd := v.Verify(context.Background(), fuzzImage, trust.Artifact{Format: trust.FormatSimpleSigning, Payload: payload, Annotations: ann})
		if fd.Verified || fd.Error == "" {
			t.Fatalf("random input verified: %+v", fd)
		}
	})
}

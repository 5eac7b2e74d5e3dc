package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
	"github.com/wharfproject/wharf/trust"
)

// fakeVerifier verifies an artifact whose payload is "sig:<root>" for one
// of its roots (the key or CA bytes its requirement gave it). The
// annotation "ref" becomes the finding's DockerReference.
type fakeVerifier struct {
	kind  string
	roots [][]byte
	calls *[]digest.Digest
}

func (f *fakeVerifier) Verify(_ context.Context, img trust.Image, a trust.Artifact) trust.Finding {
	if f.calls != nil {
		*f.calls = append(*f.calls, a.Digest)
	}
	if a.Subject != img.Digest {
		panic("verifier got an artifact for another subject")
	}
	for _, r := range f.roots {
		if string(a.Payload) == "sig:"+string(r) {
			return trust.Finding{Name: f.kind + " signed by " + string(r), Verified: true, DockerReference: a.Annotations["ref"], KeyFingerprint: "SHA256:" + string(r)}
		}
	}
	return trust.Finding{Error: "signature does not verify"}
}

// fakeOptions builds fake verifiers, recording every Verify call.
func fakeOptions(calls *[]digest.Digest) Options {
	return Options{
		NewSigstore: func(c SigstoreConfig) (Verifier, error) {
			roots := c.Keys
			if c.Fulcio != nil {
				roots = [][]byte{c.Fulcio.CAPEM}
			}
			if c.PKI != nil {
				roots = [][]byte{c.PKI.CARootsPEM}
			}
			for _, r := range roots {
				if string(r) == "broken" {
					return nil, errors.New("no PEM block")
				}
			}
			return &fakeVerifier{kind: "sigstore", roots: roots, calls: calls}, nil
		},
		NewNotation: func(c NotationConfig) (Verifier, error) {
			return &fakeVerifier{kind: "notation", roots: c.TrustStore, calls: calls}, nil
		},
	}
}

// writeFiles writes name→content under a temp dir and returns the dir.
func writeFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// expand replaces $DIR in a policy text.
func expand(s, dir string) string { return strings.ReplaceAll(s, "$DIR", dir) }

func mustParse(t testing.TB, text string, opts Options) *Policy {
	t.Helper()
	p, err := Parse([]byte(text), "/etc/containers", opts)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, text)
	}
	return p
}

func named(t testing.TB, s string) reference.Named {
	t.Helper()
	r, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return r
}

func dg(c byte) digest.Digest {
	return digest.Digest(fmt.Sprintf("sha256:%064x", c))
}

// evaluate is p.Evaluate over artifacts in memory, which never fail a walk.
func evaluate(t testing.TB, p *Policy, ctx context.Context, img trust.Image, arts []trust.Artifact) trust.Verdict {
	t.Helper()
	v, err := p.Evaluate(ctx, img, trust.Artifacts(arts))
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return v
}

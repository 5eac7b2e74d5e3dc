package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/wharfproject/wharf/trust"
)

const evalPolicy = `{
  "default": [{"type": "reject"}],
  "transports": {"docker": {
    "open.example": [{"type": "insecureAcceptAnything"}],
    "docker.io/library": [{"type": "sigstoreSigned", "keyData": "QQ=="}],
    "repo.example": [{"type": "sigstoreSigned", "keyData": "QQ==", "signedIdentity": {"type": "matchRepository"}}],
    "exact.example": [{"type": "sigstoreSigned", "keyData": "QQ==", "signedIdentity": {"type": "exactReference", "dockerReference": "other.example/x:1"}}],
    "both.example": [{"type": "sigstoreSigned", "keyData": "QQ=="}, {"type": "notationSigned", "trustStore": {"caData": ["Tg=="]}, "trustedIdentities": ["*"], "signatureVerification": {"level": "strict"}}],
    "two.example": [{"type": "sigstoreSigned", "keyData": "QQ=="}, {"type": "sigstoreSigned", "keyData": "Qg=="}],
    "gpg.example": [{"type": "signedBy", "keyType": "GPGKeys", "keyData": "Rw=="}],
    "audit.example": [{"type": "notationSigned", "trustStore": {"caData": ["Tg=="]}, "trustedIdentities": ["*"], "signatureVerification": {"level": "audit"}}],
    "skip.example": [{"type": "notationSigned", "signatureVerification": {"level": "skip"}}],
    "mixed.example": [{"type": "insecureAcceptAnything"}, {"type": "reject"}]
  }}
}`

// art is an artifact of format f signing the image with root ("A" is key
// A's signature), optionally naming ref.
func art(c byte, f trust.Format, root, ref string) trust.Artifact {
	a := trust.Artifact{Format: f, Digest: dg(c), Subject: img0, Payload: []byte("sig:" + root)}
	if ref != "" {
		a.Annotations = map[string]string{"ref": ref}
	}
	return a
}

var img0 = dg(0xee)

func TestEvaluate(t *testing.T) {
	bundleA := art(1, trust.FormatSigstoreBundle, "A", "")
	bundleB := art(2, trust.FormatSigstoreBundle, "B", "")
	bundleX := art(3, trust.FormatSigstoreBundle, "X", "")
	notationN := art(4, trust.FormatNotation, "N", "")
	notationX := art(5, trust.FormatNotation, "X", "")
	foreign := art(6, trust.FormatSigstoreBundle, "A", "")
	foreign.Subject = dg(0x77)
	// One legacy .sig manifest, two signatures (layers): X's, then A's.
	sigX, sigA := art(7, trust.FormatSimpleSigning, "X", ""), art(7, trust.FormatSimpleSigning, "A", "")
	sigX.Layer, sigA.Layer = 0, 1
	for _, c := range []struct {
		name, ref string
		arts      []trust.Artifact
		decision  trust.Decision
		scope     string
		req       string
		reason    string // a part of the Reason
		calls     int
		findings  int
	}{
		{"default rejects", "elsewhere.example/x:1", nil, trust.Rejected, "default", TypeReject,
			`elsewhere.example/x:1 (` + string(img0) + `) is rejected by policy scope "default": reject: the scope rejects every image`, 0, 0},
		{"accept anything", "open.example/x", []trust.Artifact{bundleA}, trust.Accepted, "open.example", TypeInsecureAcceptAnything, "accepts any image", 0, 0},
		{"verified bundle", "alpine:3", []trust.Artifact{bundleB, bundleA}, trust.Accepted, "docker.io/library", TypeSigstoreSigned,
			`is accepted by policy scope "docker.io/library": sigstoreSigned: signature sha256:000000000000… verified (sigstore signed by A)`, 2, 2},
		{"no signature", "alpine:3", nil, trust.Rejected, "docker.io/library", TypeSigstoreSigned, "sigstoreSigned: no signature found", 0, 0},
		{"none verifies", "alpine:3", []trust.Artifact{bundleB, bundleX}, trust.Rejected, "docker.io/library", TypeSigstoreSigned,
			"no signature verified (2 found: sha256:000000000000…: signature does not verify; sha256:000000000000…: signature does not verify)", 2, 2},
		{"wrong format only", "alpine:3", []trust.Artifact{notationN}, trust.Rejected, "docker.io/library", TypeSigstoreSigned, "no signature found", 0, 0},
		{"subject mismatch never verified", "alpine:3", []trust.Artifact{foreign}, trust.Rejected, "docker.io/library", TypeSigstoreSigned,
			"no signature found, and 1 referrer(s) for another subject were ignored", 0, 1},
		{"two signatures in one .sig manifest", "alpine:3", []trust.Artifact{sigX, sigA}, trust.Accepted, "docker.io/library", TypeSigstoreSigned, "verified", 2, 2},
		{"duplicate artifact verified once", "alpine:3", []trust.Artifact{bundleA, bundleA}, trust.Accepted, "docker.io/library", TypeSigstoreSigned, "verified", 1, 1},
		{"all of: second missing", "both.example/x", []trust.Artifact{bundleA, notationX}, trust.Rejected, "both.example", TypeNotationSigned, "notationSigned: no signature verified (1 found", 2, 2},
		{"all of: both", "both.example/x", []trust.Artifact{bundleA, notationN}, trust.Accepted, "both.example", TypeSigstoreSigned, "sigstoreSigned: signature", 2, 2},
		{"all of: two keys, one", "two.example/x", []trust.Artifact{bundleA}, trust.Rejected, "two.example", TypeSigstoreSigned, "no signature verified (1 found", 2, 1},
		{"all of: two keys, both", "two.example/x", []trust.Artifact{bundleA, bundleB}, trust.Accepted, "two.example", TypeSigstoreSigned, "", 3, 2}, // A stops at bundleA; B tries A then B
		{"signedBy", "gpg.example/x", []trust.Artifact{bundleA}, trust.Rejected, "gpg.example", TypeSignedBy, signedByReason, 0, 0},
		{"audit accepts a failure", "audit.example/x", []trust.Artifact{notationX}, trust.Accepted, "audit.example", TypeNotationSigned, "level audit records and does not enforce (0 of 1 verified)", 1, 1},
		{"skip", "skip.example/x", []trust.Artifact{notationX}, trust.Accepted, "skip.example", TypeNotationSigned, "level skip verifies nothing", 0, 0},
		{"accept then reject", "mixed.example/x", nil, trust.Rejected, "mixed.example", TypeReject, "reject", 0, 0},
		{"bundle binds by digest alone", "exact.example/x:1", []trust.Artifact{bundleA}, trust.Accepted, "exact.example", TypeSigstoreSigned, "verified", 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []digest.Digest
			p := mustParse(t, evalPolicy, fakeOptions(&calls))
			v := evaluate(t, p, context.Background(), trust.Image{Reference: named(t, c.ref), Digest: img0}, c.arts)
			if v.Decision != c.decision || v.Scope != c.scope || v.Requirement != c.req {
				t.Errorf("verdict %s %q %s, want %s %q %s (%s)", v.Decision, v.Scope, v.Requirement, c.decision, c.scope, c.req, v.Reason)
			}
			if !strings.Contains(v.Reason, c.reason) {
				t.Errorf("reason %q does not contain %q", v.Reason, c.reason)
			}
			if len(calls) != c.calls || len(v.Findings) != c.findings {
				t.Errorf("%d verifier calls and %d findings, want %d and %d: %+v", len(calls), len(v.Findings), c.calls, c.findings, v.Findings)
			}
			if v.Revision != p.Revision() {
				t.Errorf("revision %q", v.Revision)
			}
			for _, f := range v.Findings {
				if f.Artifact == foreign.Digest && (f.Verified || f.Error != "referrer's subject is "+string(foreign.Subject)+", not the image") {
					t.Errorf("foreign finding %+v", f)
				}
			}
		})
	}
}

// A legacy simple-signing signature names a reference; the signedIdentity
// judges it (containers' semantics).
func TestEvaluateSimpleSigningIdentity(t *testing.T) {
	const repoDigest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		ref, signed string
		want        trust.Decision
	}{
		{"alpine:3", "docker.io/library/alpine:3", trust.Accepted},
		{"alpine", "docker.io/library/alpine:latest", trust.Accepted}, // a bare name is :latest
		{"alpine:3", "docker.io/library/alpine:4", trust.Rejected},
		{"alpine:3", "docker.io/library/alpine", trust.Rejected}, // cosign names the repository only
		{"alpine" + repoDigest, "docker.io/library/alpine:4", trust.Accepted},
		{"alpine" + repoDigest, "docker.io/library/other:4", trust.Rejected},
		{"repo.example/x:1", "repo.example/x", trust.Accepted}, // matchRepository
		{"repo.example/x:1", "repo.example/y", trust.Rejected},
		{"exact.example/x:1", "other.example/x:1", trust.Accepted}, // exactReference
		{"exact.example/x:1", "exact.example/x:1", trust.Rejected},
	} {
		p := mustParse(t, evalPolicy, fakeOptions(nil))
		a := art(1, trust.FormatSimpleSigning, "A", c.signed)
		v := evaluate(t, p, context.Background(), trust.Image{Reference: named(t, c.ref), Digest: img0}, []trust.Artifact{a})
		if v.Decision != c.want {
			t.Errorf("%s signed as %s: %s (%s)", c.ref, c.signed, v.Decision, v.Reason)
		}
		if c.want == trust.Rejected && (len(v.Findings) != 1 || v.Findings[0].Verified || !strings.Contains(v.Findings[0].Error, c.signed)) {
			t.Errorf("%s signed as %s: findings %+v", c.ref, c.signed, v.Findings)
		}
	}
}

type liar struct{}

func (liar) Verify(context.Context, trust.Image, trust.Artifact) trust.Finding {
	return trust.Finding{Verified: true, Error: "expired", Artifact: "sha256:forged"}
}

func TestEvaluateFailsClosed(t *testing.T) {
	opts := Options{NewSigstore: func(SigstoreConfig) (Verifier, error) { return liar{}, nil }}
	p := mustParse(t, `{"default":[{"type":"sigstoreSigned","keyData":"QQ=="}]}`, opts)
	a := art(1, trust.FormatSigstoreBundle, "A", "")
	img := trust.Image{Reference: named(t, "x.example/y:1"), Digest: img0}
	v := evaluate(t, p, context.Background(), img, []trust.Artifact{a})
	if v.Decision != trust.Rejected || v.Findings[0].Verified || v.Findings[0].Artifact != a.Digest {
		t.Errorf("a finding with an error counted: %+v", v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p = mustParse(t, `{"default":[{"type":"sigstoreSigned","keyData":"QQ=="}]}`, fakeOptions(nil))
	if v := evaluate(t, p, ctx, img, []trust.Artifact{a}); v.Decision != trust.Rejected || !strings.Contains(v.Reason, "canceled") {
		t.Errorf("cancelled: %+v", v)
	}
	if v := evaluate(t, p, context.Background(), trust.Image{Digest: img0}, []trust.Artifact{a}); v.Decision != trust.Rejected {
		t.Errorf("no reference: %+v", v)
	}
	bad := trust.Image{Reference: img.Reference, Digest: ""}
	a.Subject = ""
	if v := evaluate(t, p, context.Background(), bad, []trust.Artifact{a}); v.Decision != trust.Rejected || len(v.Findings) != 1 || v.Findings[0].Error == "" {
		t.Errorf("empty image digest: %+v", v)
	}
}

func TestNeedsSignatures(t *testing.T) {
	p := mustParse(t, evalPolicy, fakeOptions(nil))
	for ref, want := range map[string]bool{
		"open.example/x": false, "elsewhere.example/x": false, "alpine": true, "both.example/x": true,
		"gpg.example/x": false, "audit.example/x": true, "skip.example/x": false, "mixed.example/x": false,
	} {
		if got := p.NeedsSignatures(named(t, ref)); got != want {
			t.Errorf("NeedsSignatures(%s) = %v", ref, got)
		}
	}
}

func TestShow(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.pub": "-----BEGIN PUBLIC KEY-----\nQUFB\n-----END PUBLIC KEY-----\n"})
	p := mustParse(t, expand(`{"default":[{"type":"reject"}],"transports":{"docker":{
	  "quay.io": [{"type":"sigstoreSigned","keyPath":"$DIR/a.pub","rekorPublicKeyData":"Ug==","signedIdentity":{"type":"matchRepository"}}],
	  "ghcr.io": [{"type":"notationSigned","trustStore":{"caData":["Tg==","Tw=="]},"trustedIdentities":["x509.subject: CN=a"],"signatureVerification":{"level":"permissive"}}]}}}`, dir), fakeOptions(nil))
	s := p.Show(named(t, "quay.io/org/app"))
	if s.Scope != "quay.io" || s.Reference != "quay.io/org/app:latest" || !s.NeedsSignatures || len(s.Requirements) != 1 {
		t.Fatalf("Show = %+v", s)
	}
	r := s.Requirements[0]
	if r.Identity != MatchRepository || len(r.Keys) != 1 || r.Keys[0].Source != dir+"/a.pub" || r.Keys[0].Fingerprints[0] != fingerprint([]byte("AAA")) {
		t.Errorf("requirement %+v", r)
	}
	if len(r.RekorKeys) != 1 || r.RekorKeys[0].Source != "rekorPublicKeyData" {
		t.Errorf("rekor keys %+v", r.RekorKeys)
	}
	n := p.Show(named(t, "ghcr.io/a/b")).Requirements[0]
	if n.Level != LevelPermissive || len(n.Keys) != 2 || n.Keys[1].Source != "trustStore.caData[1]" || n.TrustedIdentities[0] != "x509.subject: CN=a" {
		t.Errorf("notation %+v", n)
	}
	if d := p.Show(named(t, "busybox")); d.Scope != ScopeDefault || d.Requirements[0].Type != TypeReject || d.NeedsSignatures {
		t.Errorf("default %+v", d)
	}
}

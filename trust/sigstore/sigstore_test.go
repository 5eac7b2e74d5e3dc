package sigstore

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/trust"
)

// fixtures is what gen.sh wrote (real cosign against the real registry).
type fixtures struct {
	dir                              string
	signerPub, otherPub              []byte
	root, inter, otherRoot, chainPEM []byte
	leaf                             *x509.Certificate
}

func loadFixtures(t *testing.T, dir string) *fixtures {
	t.Helper()
	rd := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fx := &fixtures{dir: dir,
		signerPub: rd("keys/signer.pub"), otherPub: rd("keys/other.pub"),
		root: rd("pki/root.pem"), inter: rd("pki/intermediate.pem"),
		otherRoot: rd("pki/other-root.pem"), chainPEM: rd("pki/chain.pem")}
	blk, _ := pem.Decode(rd("pki/leaf.pem"))
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	fx.leaf = leaf
	return fx
}

// artifact reads one fixture: the artifact and the image it signs.
func (fx *fixtures) artifact(t *testing.T, name string) (trust.Image, trust.Artifact) {
	t.Helper()
	return fx.artifactF(t, name)
}

func (fx *fixtures) artifactF(t testing.TB, name string) (trust.Image, trust.Artifact) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fx.dir, name, "artifact.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Format, Digest, Subject, MediaType string
		Annotations                        map[string]string
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	payload, err := os.ReadFile(filepath.Join(fx.dir, name, "payload"))
	if err != nil {
		t.Fatal(err)
	}
	a := trust.Artifact{Format: trust.Format(m.Format), Digest: digest.Digest(m.Digest),
		Subject: digest.Digest(m.Subject), MediaType: m.MediaType, Payload: payload, Annotations: m.Annotations}
	return trust.Image{Digest: digest.Digest(m.Subject)}, a
}

const (
	email  = "signer@example.com"
	issuer = "https://issuer.example.com"
)

// tamper flips one byte of what the signature covers, keeping it parseable:
// a bundle's DSSE payload (a subject's annotations key), a .sig payload's
// docker-reference.
func tamper(t *testing.T, a trust.Artifact) trust.Artifact {
	t.Helper()
	if a.Format == trust.FormatSimpleSigning {
		a.Payload = []byte(strings.Replace(string(a.Payload), "wharf", "wharg", 1))
		return a
	}
	var b map[string]any
	if err := json.Unmarshal(a.Payload, &b); err != nil {
		t.Fatal(err)
	}
	env := b["dsseEnvelope"].(map[string]any)
	p, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
	p = []byte(strings.Replace(string(p), `"annotations"`, `"annotationS"`, 1))
	env["payload"] = base64.StdEncoding.EncodeToString(p)
	a.Payload, _ = json.Marshal(b)
	return a
}

type tcase struct {
	name    string
	cfg     func(fx *fixtures) Config
	now     func(fx *fixtures) time.Time // nil: inside the leaf's validity
	tamper  bool
	digest  digest.Digest // non-empty: the image is another digest
	wantErr string        // "": must verify
}

func runCases(t *testing.T, fx *fixtures, fixture string, cases []tcase) {
	for _, tc := range cases {
		t.Run(fixture+"/"+tc.name, func(t *testing.T) {
			img, a := fx.artifact(t, fixture)
			cfg := tc.cfg(fx)
			now := fx.leaf.NotBefore.Add(time.Hour)
			if tc.now != nil {
				now = tc.now(fx)
			}
			cfg.Now = func() time.Time { return now }
			v, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.tamper {
				a = tamper(t, a)
			}
			if tc.digest != "" {
				img.Digest = tc.digest
			}
			f := v.Verify(context.Background(), img, a)
			if tc.wantErr != "" {
				if f.Verified || !strings.Contains(f.Error, tc.wantErr) {
					t.Fatalf("want rejection %q, got Verified=%v Error=%q", tc.wantErr, f.Verified, f.Error)
				}
				if f.KeyFingerprint != "" || f.Signer != nil {
					t.Fatalf("a rejection carries identity: %+v", f)
				}
				return
			}
			if !f.Verified || f.Error != "" {
				t.Fatalf("want verified, got %+v", f)
			}
			checkAccepted(t, fx, a, f)
		})
	}
}

func checkAccepted(t *testing.T, fx *fixtures, a trust.Artifact, f trust.Finding) {
	t.Helper()
	blk, _ := pem.Decode(fx.signerPub)
	pub, _ := x509.ParsePKIXPublicKey(blk.Bytes)
	fp, _ := fingerprint(pub)
	if f.KeyFingerprint != fp {
		t.Errorf("KeyFingerprint %q, want %q", f.KeyFingerprint, fp)
	}
	if f.Artifact != a.Digest || f.Format != a.Format || f.Name == "" {
		t.Errorf("Artifact/Format/Name: %+v", f)
	}
	want := "hashedrecord"
	if a.Format == trust.FormatSigstoreBundle {
		want = "bundle-v0.3"
	} else if !strings.Contains(f.DockerReference, "/wharf/") {
		t.Errorf("DockerReference %q", f.DockerReference)
	}
	if f.SignatureType != want {
		t.Errorf("SignatureType %q, want %q", f.SignatureType, want)
	}
	if len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "Rekor") {
		t.Errorf("Warnings %q: want the no-Rekor-key warning", f.Warnings)
	}
}

func keys(k ...func(*fixtures) []byte) func(*fixtures) Config {
	return func(fx *fixtures) Config {
		var c Config
		for _, f := range k {
			c.Keys = append(c.Keys, f(fx))
		}
		return c
	}
}

func signerKey(fx *fixtures) []byte { return fx.signerPub }
func otherKey(fx *fixtures) []byte  { return fx.otherPub }

func fulcio(mod func(*Fulcio)) func(*fixtures) Config {
	return func(fx *fixtures) Config {
		f := &Fulcio{CAPEM: append(append([]byte{}, fx.root...), fx.inter...), OIDCIssuer: issuer, SubjectEmail: email}
		if mod != nil {
			mod(f)
		}
		return Config{Fulcio: f}
	}
}

func pki(mod func(*PKI)) func(*fixtures) Config {
	return func(fx *fixtures) Config {
		p := &PKI{CARootsPEM: fx.root, CAIntermediatesPEM: fx.inter, SubjectEmail: email}
		if mod != nil {
			mod(p)
		}
		return Config{PKI: p}
	}
}

var otherDigest = digest.FromString("another image")

// keyCases apply to the fixtures signed with --key only; each rejection
// names the check that alone stops it. Each was shown to be needed by
// disabling that check (a mutation: verifyWith always nil, the subjects
// comparison, the e-mail, host-name and issuer comparisons, the Roots pool,
// CurrentTime, the SET signature, the body binding, the integrated time as
// the time of check): the case(s) naming it then fail.
var keyCases = []tcase{
	{name: "accepted by its key", cfg: keys(signerKey)},
	{name: "accepted by one of two keys", cfg: keys(otherKey, signerKey)},
	// the signature check (verifyWith over every configured key)
	{name: "another key", cfg: keys(otherKey), wantErr: "does not verify with any configured key"},
	// the signature check: the signed bytes changed
	{name: "tampered payload", cfg: keys(signerKey), tamper: true, wantErr: "does not verify"},
	// the digest binding (subjects vs img.Digest)
	{name: "another digest", cfg: keys(signerKey), digest: otherDigest, wantErr: "signature is over sha256:"},
	// a key-only signature cannot satisfy a CA requirement
	{name: "no certificate for fulcio", cfg: fulcio(nil), wantErr: "no certificate"},
}

func expired(fx *fixtures) time.Time { return fx.leaf.NotAfter.Add(time.Hour) }

// certCases apply to the fixtures signed with --certificate/--certificate-chain.
var certCases = []tcase{
	{name: "fulcio accepted", cfg: fulcio(nil)},
	{name: "fulcio any identity", cfg: fulcio(func(f *Fulcio) { f.OIDCIssuer, f.SubjectEmail = "", "" })},
	{name: "fulcio intermediate pinned", cfg: func(fx *fixtures) Config {
		return Config{Fulcio: &Fulcio{CAPEM: fx.inter, OIDCIssuer: issuer, SubjectEmail: email}}
	}},
	{name: "pki accepted", cfg: pki(nil)},
	{name: "pki roots only, chain from the signature", cfg: pki(func(p *PKI) { p.CAIntermediatesPEM = nil })},
	{name: "its key accepts it too", cfg: keys(signerKey)},
	// the signature check (keys configured, no CA to fall back on)
	{name: "another key", cfg: keys(otherKey), wantErr: "does not verify with any configured key"},
	// the subject-email check
	{name: "fulcio another email", cfg: fulcio(func(f *Fulcio) { f.SubjectEmail = "a@b.example" }),
		wantErr: "subject email signer@example.com is not the required a@b.example"},
	{name: "pki another email", cfg: pki(func(p *PKI) { p.SubjectEmail = "a@b.example" }),
		wantErr: "subject email signer@example.com is not the required a@b.example"},
	// the subject-hostname check
	{name: "pki another hostname", cfg: pki(func(p *PKI) { p.SubjectHostname = "h.example" }),
		wantErr: "subject hostname (none) is not the required h.example"},
	// the OIDC-issuer check
	{name: "fulcio another issuer", cfg: fulcio(func(f *Fulcio) { f.OIDCIssuer = "https://other.example" }),
		wantErr: "OIDC issuer https://issuer.example.com is not the required https://other.example"},
	// the chain check (Roots)
	{name: "fulcio another root", cfg: func(fx *fixtures) Config {
		return Config{Fulcio: &Fulcio{CAPEM: fx.otherRoot, OIDCIssuer: issuer, SubjectEmail: email}}
	}, wantErr: "certificate chains to no configured Fulcio root"},
	{name: "pki another root", cfg: func(fx *fixtures) Config {
		return Config{PKI: &PKI{CARootsPEM: fx.otherRoot, CAIntermediatesPEM: fx.inter, SubjectEmail: email}}
	}, wantErr: "certificate chains to no configured PKI root"},
	// the validity check at "now" (no tlog time)
	{name: "fulcio expired", cfg: fulcio(nil), now: expired, wantErr: "certificate is not valid at"},
	{name: "pki expired", cfg: pki(nil), now: expired, wantErr: "certificate is not valid at"},
	// the signature check
	{name: "tampered payload", cfg: fulcio(nil), tamper: true, wantErr: "does not verify"},
	// the digest binding
	{name: "another digest", cfg: fulcio(nil), digest: otherDigest, wantErr: "signature is over sha256:"},
	{name: "pki another digest", cfg: pki(nil), digest: otherDigest, wantErr: "signature is over sha256:"},
}

func TestFixtures(t *testing.T) {
	fx := loadFixtures(t, "testdata")
	runAll(t, fx)
}

func runAll(t *testing.T, fx *fixtures) {
	for _, name := range []string{"key-bundle", "key-sig"} {
		runCases(t, fx, name, keyCases)
	}
	for _, name := range []string{"cert-bundle", "cert-sig"} {
		runCases(t, fx, name, certCases)
	}
}

package notation

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/trust"
)

const (
	jwsType  = "application/jose+json"
	coseType = "application/cose"
)

var (
	imageDigest = digest.FromString("the image manifest")
	otherDigest = digest.FromString("another manifest")
	trustedID   = "x509.subject: C=US, ST=WA, O=wharf test"
)

func image(d digest.Digest) trust.Image { return trust.Image{Digest: d} }

// tamper flips one character of the signed descriptor (its digest's hex),
// inside the JWS's base64url payload or the COSE's CBOR payload.
func tamper(t *testing.T, mediaType string, env []byte) []byte {
	t.Helper()
	flip := func(b []byte) []byte {
		i := bytes.Index(b, []byte("sha256:"))
		if i < 0 {
			t.Fatal("no digest in payload")
		}
		out := bytes.Clone(b)
		j := i + len("sha256:")
		if out[j] == 'a' {
			out[j] = 'b'
		} else {
			out[j] = 'a'
		}
		return out
	}
	if mediaType == coseType {
		return flip(env)
	}
	var m map[string]any
	if err := json.Unmarshal(env, &m); err != nil {
		t.Fatal(err)
	}
	p, err := base64.RawURLEncoding.DecodeString(m["payload"].(string))
	if err != nil {
		t.Fatal(err)
	}
	m["payload"] = base64.RawURLEncoding.EncodeToString(flip(p))
	out, _ := json.Marshal(m)
	return out
}

func TestVerify(t *testing.T) {
	ca := newCA(t, "wharf test root")
	other := newCA(t, "another root")
	now := time.Now()
	soon := now.Add(2 * time.Hour) // after a short-lived leaf, before the roots' end
	type tc struct {
		name     string
		level    string
		store    *testCA
		ids      []string
		now      time.Time
		leafEnd  time.Time     // zero: a day
		expiry   time.Duration // the signature's own expiry attribute
		signed   digest.Digest // zero: imageDigest
		mutate   func(t *testing.T, mt string, env []byte) []byte
		annot    func(map[string]string) map[string]string
		wantErr  string // "" means Verified
		wantWarn string
	}
	cases := []tc{
		{name: "accepted: trust store and identity match", level: "strict", store: ca, ids: []string{trustedID}},
		{name: "accepted: wildcard identity", level: "strict", store: ca, ids: []string{"*"}},
		{name: "accepted: full subject", level: "strict", store: ca, ids: []string{"x509.subject: C=US, ST=WA, O=wharf test, CN=release signer"}},
		// authenticity: the chain ends at a root the trust store does not hold
		{name: "authenticity: another CA", level: "strict", store: other, ids: []string{"*"}, wantErr: "certificate chain does not lead to a trust store certificate"},
		{name: "authenticity: another CA, permissive enforces too", level: "permissive", store: other, ids: []string{"*"}, wantErr: "certificate chain does not lead to a trust store certificate"},
		{name: "authenticity: another CA, audit only logs", level: "audit", store: other, ids: []string{"*"}, wantWarn: "authenticity check failed (logged at level audit): certificate chain does not lead"},
		// authenticity (trusted identity): the leaf's subject lacks an RDN
		{name: "authenticity: untrusted identity", level: "strict", store: ca, ids: []string{"x509.subject: C=US, ST=WA, O=wharf test, CN=someone else"}, wantErr: "signing identity CN=release signer,O=wharf test,ST=WA,C=US is not trusted"},
		{name: "authenticity: untrusted organisation", level: "permissive", store: ca, ids: []string{"x509.subject: C=US, ST=WA, O=evil"}, wantErr: "is not trusted"},
		// integrity: the signed bytes changed
		{name: "integrity: tampered payload", level: "strict", store: ca, ids: []string{"*"}, mutate: tamper, wantErr: "signature integrity check failed"},
		{name: "integrity: tampered payload, audit enforces too", level: "audit", store: ca, ids: []string{"*"}, mutate: tamper, wantErr: "signature integrity check failed"},
		// target binding: a valid signature for another manifest
		{name: "target: signature over another digest", level: "strict", store: ca, ids: []string{"*"}, signed: otherDigest, wantErr: "signature is over " + otherDigest.String() + ", not the image's " + imageDigest.String()},
		{name: "target: another digest, audit enforces too", level: "audit", store: ca, ids: []string{"*"}, signed: otherDigest, wantErr: "signature is over"},
		// authenticTimestamp: no TSA store, so the chain must be valid now
		{name: "authenticTimestamp: expired leaf at strict", level: "strict", store: ca, ids: []string{"*"}, leafEnd: now.Add(time.Hour), now: soon, wantErr: "certificate CN=release signer,O=wharf test,ST=WA,C=US is not valid now: expired at"},
		{name: "authenticTimestamp: expired leaf at permissive logs", level: "permissive", store: ca, ids: []string{"*"}, leafEnd: now.Add(time.Hour), now: soon, wantWarn: "authenticTimestamp check failed (logged at level permissive): certificate"},
		{name: "authenticTimestamp: expired leaf at audit logs", level: "audit", store: ca, ids: []string{"*"}, leafEnd: now.Add(time.Hour), now: soon, wantWarn: "authenticTimestamp check failed (logged at level audit)"},
		// expiry: the signature's own expiry attribute
		{name: "expiry: expired signature at strict", level: "strict", store: ca, ids: []string{"*"}, expiry: time.Hour, now: soon, wantErr: "signature expired at"},
		{name: "expiry: expired signature at permissive logs", level: "permissive", store: ca, ids: []string{"*"}, expiry: time.Hour, now: soon, wantWarn: "expiry check failed (logged at level permissive): signature expired at"},
		// the manifest's thumbprint annotation must describe the envelope
		{name: "annotation: thumbprints of another chain", level: "strict", store: ca, ids: []string{"*"},
			annot: func(map[string]string) map[string]string {
				return map[string]string{AnnotationThumbprints: `["00","11"]`}
			}, wantErr: "does not match certificate 0"},
		// skip: nothing is verified, whatever the envelope
		{name: "skip verifies nothing", level: "skip", mutate: tamper, wantErr: "-", wantWarn: SkippedWarning},
	}
	for _, c := range cases {
		for _, mt := range []string{jwsType, coseType} {
			t.Run(c.name+"/"+mt, func(t *testing.T) {
				leafEnd := c.leafEnd
				if leafEnd.IsZero() {
					leafEnd = now.Add(24 * time.Hour)
				}
				signed := c.signed
				if signed == "" {
					signed = imageDigest
				}
				env, annotations := sign(t, ca, leafEnd, signed, mt, c.expiry)
				if c.mutate != nil {
					env = c.mutate(t, mt, env)
				}
				if c.annot != nil {
					annotations = c.annot(annotations)
				}
				cfg := Config{Level: c.level, TrustedIdentities: c.ids}
				if c.store != nil {
					cfg.TrustStore = [][]byte{c.store.pem()}
				}
				if !c.now.IsZero() {
					at := c.now
					cfg.Now = func() time.Time { return at }
				}
				v, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				art := trust.Artifact{Format: trust.FormatNotation, Digest: digest.FromString("sig manifest"), Subject: imageDigest, MediaType: mt, Payload: env, Annotations: annotations}
				f := v.Verify(context.Background(), image(imageDigest), art)
				if f.SignatureType != "notation" || f.Format != trust.FormatNotation || f.Artifact != art.Digest {
					t.Errorf("finding header = %q %q %q", f.SignatureType, f.Format, f.Artifact)
				}
				switch c.wantErr {
				case "":
					if !f.Verified || f.Error != "" {
						t.Fatalf("not verified: %q", f.Error)
					}
					checkIdentity(t, f)
				case "-": // skip
					if f.Verified || f.Error != "" {
						t.Fatalf("skip: Verified=%v Error=%q", f.Verified, f.Error)
					}
				default:
					if f.Verified || !strings.Contains(f.Error, c.wantErr) {
						t.Fatalf("Verified=%v Error=%q, want error containing %q", f.Verified, f.Error, c.wantErr)
					}
					if f.Signer != nil || f.Name != "" || f.Timestamps != nil {
						t.Errorf("failed finding keeps identity fields: %+v", f)
					}
				}
				if c.wantWarn != "" && !hasWarning(f, c.wantWarn) {
					t.Errorf("warnings %q lack %q", f.Warnings, c.wantWarn)
				}
				if c.wantErr == "" && c.level != "skip" && !hasWarning(f, RevocationWarning) {
					t.Errorf("warnings %q do not say revocation was not checked", f.Warnings)
				}
			})
		}
	}
}

func hasWarning(f trust.Finding, s string) bool {
	for _, w := range f.Warnings {
		if strings.Contains(w, s) {
			return true
		}
	}
	return false
}

// checkIdentity checks what a verified finding says about its signer.
func checkIdentity(t *testing.T, f trust.Finding) {
	t.Helper()
	if f.Name != "notation signature by CN=release signer,O=wharf test,ST=WA,C=US" {
		t.Errorf("Name = %q", f.Name)
	}
	if f.Signer == nil || f.Signer.CertificateIssuer != "CN=wharf test root,O=wharf test,ST=WA,C=US" ||
		f.Signer.SubjectAlternativeName != "CN=release signer,O=wharf test,ST=WA,C=US" {
		t.Errorf("Signer = %+v", f.Signer)
	}
	if !strings.HasPrefix(f.KeyFingerprint, "SHA256:") || len(f.KeyFingerprint) != len("SHA256:")+43 {
		t.Errorf("KeyFingerprint = %q", f.KeyFingerprint)
	}
	if len(f.Timestamps) != 1 || f.Timestamps[0].Type != "SigningTime" || time.Since(f.Timestamps[0].Timestamp) > time.Minute {
		t.Errorf("Timestamps = %+v", f.Timestamps)
	}
}

func TestKeyFingerprint(t *testing.T) {
	ca := newCA(t, "wharf test root")
	env, _ := sign(t, ca, time.Now().Add(time.Hour), imageDigest, jwsType, 0)
	v, err := New(Config{Level: "strict", TrustStore: [][]byte{ca.pem()}, TrustedIdentities: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	f := v.Verify(context.Background(), image(imageDigest), trust.Artifact{MediaType: jwsType, Payload: env})
	var hdr struct {
		Header struct {
			X5c [][]byte `json:"x5c"`
		} `json:"header"`
	}
	if err := json.Unmarshal(env, &hdr); err != nil || len(hdr.Header.X5c) == 0 {
		t.Fatal(err)
	}
	cert := mustParse(t, hdr.Header.X5c[0])
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	if want := "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:]); f.KeyFingerprint != want {
		t.Errorf("KeyFingerprint = %q, want %q", f.KeyFingerprint, want)
	}
}

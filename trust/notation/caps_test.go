package notation

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/trust"
)

func mustParse(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCaps(t *testing.T) {
	ca := newCA(t, "wharf test root")
	v, err := New(Config{Level: "strict", TrustStore: [][]byte{ca.pem()}, TrustedIdentities: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	env, _ := sign(t, ca, time.Now().Add(time.Hour), imageDigest, jwsType, 0)

	// A chain of 11 certificates is refused before any is parsed.
	var m map[string]any
	if err := json.Unmarshal(env, &m); err != nil {
		t.Fatal(err)
	}
	hdr := m["header"].(map[string]any)
	x5c := hdr["x5c"].([]any)
	for len(x5c) <= MaxChainLength {
		x5c = append(x5c, x5c[len(x5c)-1])
	}
	hdr["x5c"] = x5c
	long, _ := json.Marshal(m)

	big := append(bytes.Clone(env), bytes.Repeat([]byte(" "), MaxEnvelopeSize)...)
	for _, c := range []struct {
		name, mediaType string
		payload         []byte
		want            string
	}{
		{"chain over the cap", jwsType, long, "certificate chain has 11 certificates, over the cap of 10"},
		{"envelope over the cap", jwsType, big, "over the 4194304-byte cap"},
		{"unknown media type", "application/json", env, "is neither application/jose+json nor application/cose"},
		{"empty", coseType, nil, "envelope does not parse"},
		{"JWS as COSE", coseType, env, "envelope does not parse"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := v.Verify(context.Background(), trust.Image{Digest: imageDigest}, trust.Artifact{MediaType: c.mediaType, Payload: c.payload})
			if f.Verified || !strings.Contains(f.Error, c.want) {
				t.Fatalf("Verified=%v Error=%q, want %q", f.Verified, f.Error, c.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	ca := newCA(t, "wharf test root")
	good := [][]byte{ca.pem()}
	for _, c := range []struct {
		name string
		cfg  Config
		want string // "" means accepted
	}{
		{"strict", Config{Level: "strict", TrustStore: good, TrustedIdentities: []string{"*"}}, ""},
		{"audit with an identity", Config{Level: "audit", TrustStore: good, TrustedIdentities: []string{"x509.subject: C=US, S=WA, O=wharf"}}, ""},
		{"signing authority store only", Config{Level: "permissive", SigningAuthority: good, TrustedIdentities: []string{"*"}}, ""},
		{"skip alone", Config{Level: "skip"}, ""},
		{"unknown level", Config{Level: "lenient", TrustStore: good, TrustedIdentities: []string{"*"}}, "unknown verification level"},
		{"empty level", Config{TrustStore: good, TrustedIdentities: []string{"*"}}, "unknown verification level"},
		{"empty trust store", Config{Level: "strict", TrustedIdentities: []string{"*"}}, "trust store is empty"},
		{"bad PEM", Config{Level: "strict", TrustStore: [][]byte{[]byte("not pem")}, TrustedIdentities: []string{"*"}}, "is not PEM certificates"},
		{"PEM with garbage after", Config{Level: "strict", TrustStore: [][]byte{append(ca.pem(), "junk"...)}, TrustedIdentities: []string{"*"}}, "is not PEM certificates"},
		{"PEM key, not certificate", Config{Level: "strict", TrustStore: [][]byte{[]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")}, TrustedIdentities: []string{"*"}}, "is not a CERTIFICATE"},
		{"no identities", Config{Level: "strict", TrustStore: good}, "trustedIdentities is empty"},
		{"wildcard with others", Config{Level: "strict", TrustStore: good, TrustedIdentities: []string{"*", "x509.subject: C=US, ST=WA, O=x"}}, "must be the only value"},
		{"unknown identity prefix", Config{Level: "strict", TrustStore: good, TrustedIdentities: []string{"email: a@b"}}, "is not \"x509.subject: <DN>\""},
		{"identity without C", Config{Level: "strict", TrustStore: good, TrustedIdentities: []string{"x509.subject: ST=WA, O=x"}}, "no C attribute"},
		{"identity with duplicate RDN", Config{Level: "strict", TrustStore: good, TrustedIdentities: []string{"x509.subject: C=US, ST=WA, O=x, O=y"}}, "duplicate RDN"},
		{"identity with multi-valued RDN", Config{Level: "strict", TrustStore: good, TrustedIdentities: []string{"x509.subject: C=US+ST=WA, O=x"}}, "multi-valued"},
		{"identity with hex value", Config{Level: "strict", TrustStore: good, TrustedIdentities: []string{"x509.subject: C=#1234, ST=WA, O=x"}}, "=#"},
		{"identity not a DN", Config{Level: "strict", TrustStore: good, TrustedIdentities: []string{"x509.subject: nonsense"}}, "not an RFC 4514"},
		{"skip with a trust store", Config{Level: "skip", TrustStore: good}, "level skip takes no trust store"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := New(c.cfg)
			if c.want == "" {
				if err != nil || v == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New error = %v, want %q", err, c.want)
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	ca := newCA(t, "wharf test root")
	v, _ := New(Config{Level: "strict", TrustStore: [][]byte{ca.pem()}, TrustedIdentities: []string{"*"}})
	env, _ := sign(t, ca, time.Now().Add(time.Hour), imageDigest, coseType, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := v.Verify(ctx, trust.Image{Digest: imageDigest}, trust.Artifact{MediaType: coseType, Payload: env, Digest: digest.FromString("x")})
	if f.Verified || !strings.Contains(f.Error, "cancelled") {
		t.Fatalf("Verified=%v Error=%q", f.Verified, f.Error)
	}
}

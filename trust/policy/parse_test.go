package policy

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestParseValid(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.pub": "A", "b.pub": "B", "ca.pem": "CA", "rekor.pub": "R", "int.pem": "I", "keyring.gpg": "G", "n.pem": "N"})
	text := expand(`{
  "default": [{"type": "reject"}],
  "transports": {
    "docker": {
      "": [{"type": "insecureAcceptAnything"}],
      "docker.io/library/alpine:3": [{"type": "sigstoreSigned", "keyPath": "$DIR/a.pub"}],
      "docker.io/library/alpine@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": [{"type": "insecureAcceptAnything"}],
      "docker.io/library": [{"type": "sigstoreSigned", "keyPaths": ["$DIR/a.pub", "$DIR/b.pub"], "signedIdentity": {"type": "matchRepository"}}],
      "quay.io/org": [{"type": "sigstoreSigned", "keyData": "`+b64("A")+`", "rekorPublicKeyData": "`+b64("R")+`"}],
      "quay.io": [{"type": "sigstoreSigned", "keyDatas": ["`+b64("A")+`"], "signedIdentity": {"type": "exactReference", "dockerReference": "quay.io/x/y:1"}}],
      "ghcr.io": [{"type": "sigstoreSigned", "fulcio": {"caPath": "$DIR/ca.pem", "oidcIssuer": "https://accounts.example", "subjectEmail": "a@example.com"}, "rekorPublicKeyPath": "$DIR/rekor.pub"}],
      "localhost:5000": [{"type": "sigstoreSigned", "pki": {"caRootsPath": "$DIR/ca.pem", "caIntermediatesPath": "$DIR/int.pem", "subjectHostname": "build.example"}, "signedIdentity": {"type": "remapIdentity", "prefix": "localhost:5000", "signedPrefix": "quay.io/org"}}],
      "*.example.com": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "$DIR/keyring.gpg", "signedIdentity": {"type": "exactRepository", "dockerRepository": "example.com/x"}}],
      "registry.example": [{"type": "notationSigned", "trustStore": {"caPaths": ["$DIR/n.pem"], "caData": ["`+b64("N2")+`"]}, "trustedIdentities": ["x509.subject: CN=builder, O=Example"], "signatureVerification": {"level": "strict"}}],
      "skip.example": [{"type": "notationSigned", "signatureVerification": {"level": "skip"}}],
      "gcr.io": [{"type": "sigstoreSigned", "keyPath": "$DIR/a.pub", "signedIdentity": {"type": "matchExact"}}, {"type": "insecureAcceptAnything"}]
    },
    "docker-daemon": {"": [{"type": "insecureAcceptAnything"}]},
    "atomic": {"registry.example/ns": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "/nonexistent/keyring"}]},
    "oci": {"/var/oci": [{"type": "reject"}]}
  }
}`, dir)
	p := mustParse(t, text, fakeOptions(nil))
	if got := p.IgnoredTransports(); strings.Join(got, ",") != "atomic,docker-daemon,oci" {
		t.Errorf("IgnoredTransports = %v", got)
	}
	if len(p.docker) != 12 {
		t.Errorf("%d docker scopes, want 12", len(p.docker))
	}
	r := p.docker["localhost:5000"][0]
	if r.Sigstore.PKI == nil || string(r.Sigstore.PKI.CAIntermediates.Data) != "I" || r.SignedIdentity.SignedPrefix != "quay.io/org" {
		t.Errorf("pki requirement = %+v", r.Sigstore.PKI)
	}
	if r := p.docker["registry.example"][0]; len(r.Notation.TrustStore) != 2 || string(r.Notation.TrustStore[1].Data) != "N2" {
		t.Errorf("notation trust store = %+v", r.Notation.TrustStore)
	}
	if r := p.docker["docker.io/library/alpine:3"][0]; r.SignedIdentity.Type != MatchRepoDigestOrExact {
		t.Errorf("default signedIdentity = %q", r.SignedIdentity.Type)
	}
	if !strings.HasPrefix(p.Revision(), "sha256:") || len(p.Revision()) != 71 {
		t.Errorf("Revision = %q", p.Revision())
	}
}

func TestRevisionFollowsKeyFiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.pub": "A"})
	text := expand(`{"default":[{"type":"sigstoreSigned","keyPath":"$DIR/a.pub"}]}`, dir)
	path := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p1, err := Load(path, fakeOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := Load(path, fakeOptions(nil))
	if p1.Revision() != p2.Revision() {
		t.Fatal("same files, different revisions")
	}
	if err := os.WriteFile(filepath.Join(dir, "a.pub"), []byte("A2"), 0o600); err != nil {
		t.Fatal(err)
	}
	p3, err := Load(path, fakeOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p3.Revision() == p1.Revision() {
		t.Fatal("a rotated key file did not change the revision")
	}
}

func TestParseErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.pub": "A", "big.pub": strings.Repeat("x", MaxKeyFileSize+1)})
	sig := func(body string) string {
		return `{"default":[{"type":"sigstoreSigned",` + body + `}]}`
	}
	key := `"keyPath":"` + dir + `/a.pub"`
	for _, tc := range []struct {
		name, text string
		kind       error
		path       string // Error.Path
		mention    string // a name the message must carry
	}{
		{"not json", `{`, ErrSyntax, "", ""},
		{"not an object", `[]`, ErrSyntax, "", ""},
		{"trailing data", `{"default":[{"type":"reject"}]} {}`, ErrSyntax, "", ""},
		{"no default", `{"transports":{}}`, ErrMissing, "default", "default"},
		{"empty default", `{"default":[]}`, ErrInvalid, "default", ""},
		{"default not array", `{"default":{}}`, ErrInvalid, "default", ""},
		{"unknown top-level key", `{"default":[{"type":"reject"}],"extra":1}`, ErrUnknownKey, "extra", "extra"},
		{"duplicate key", `{"default":[{"type":"reject"}],"default":[{"type":"reject"}]}`, ErrDuplicateKey, "default", "default"},
		{"duplicate scope", `{"default":[{"type":"reject"}],"transports":{"docker":{"a.io":[{"type":"reject"}],"a.io":[{"type":"reject"}]}}}`, ErrDuplicateKey, `transports.docker."a.io"`, "a.io"},
		{"unknown type", `{"default":[{"type":"signedByMagic"}]}`, ErrUnknownType, "default[0].type", "signedByMagic"},
		{"no type", `{"default":[{}]}`, ErrMissing, "default[0].type", ""},
		{"reject with a field", `{"default":[{"type":"reject","keyPath":"/x"}]}`, ErrUnknownKey, "default[0].keyPath", "keyPath"},
		{"unknown sigstore field", sig(key + `,"keyTypo":1`), ErrUnknownKey, "default[0].keyTypo", "keyTypo"},
		{"no sigstore root", sig(`"signedIdentity":{"type":"matchRepository"}`), ErrMissing, "default[0]", "keyPath"},
		{"two sigstore roots", sig(key + `,"keyData":"QQ=="`), ErrConflict, "default[0]", "keyData"},
		{"key and fulcio", sig(key + `,"fulcio":{}`), ErrConflict, "default[0]", "fulcio"},
		{"bad base64", sig(`"keyData":"!!"`), ErrInvalid, "default[0].keyData", ""},
		{"empty keyPaths", sig(`"keyPaths":[]`), ErrInvalid, "default[0].keyPaths", ""},
		{"relative path", sig(`"keyPath":"keys/a.pub"`), ErrRelativePath, "default[0].keyPath", "keys/a.pub"},
		{"missing file", sig(`"keyPath":"` + dir + `/nope.pub"`), ErrFile, "default[0].keyPath", "nope.pub"},
		{"missing file in keyPaths", sig(`"keyPaths":["` + dir + `/a.pub","` + dir + `/nope.pub"]`), ErrFile, "default[0].keyPaths[1]", "nope.pub"},
		{"key file too large", sig(`"keyPath":"` + dir + `/big.pub"`), ErrTooLarge, "default[0].keyPath", "big.pub"},
		{"two rekor sources", sig(key + `,"rekorPublicKeyData":"QQ==","rekorPublicKeyPath":"/r"`), ErrConflict, "default[0]", "rekorPublicKeyPath"},
		{"fulcio without rekor", sig(`"fulcio":{"caData":"QQ==","oidcIssuer":"i","subjectEmail":"e"}`), ErrMissing, "default[0]", "rekorPublicKeyPath"},
		{"pki with rekor", sig(`"pki":{"caRootsData":"QQ==","subjectEmail":"e"},"rekorPublicKeyData":"QQ=="`), ErrConflict, "default[0].rekorPublicKeyData", ""},
		{"fulcio two CAs", sig(`"fulcio":{"caData":"QQ==","caPath":"/x","oidcIssuer":"i","subjectEmail":"e"},"rekorPublicKeyData":"QQ=="`), ErrConflict, "default[0].fulcio", "caPath"},
		{"fulcio no issuer", sig(`"fulcio":{"caData":"QQ==","subjectEmail":"e"},"rekorPublicKeyData":"QQ=="`), ErrMissing, "default[0].fulcio.oidcIssuer", ""},
		{"fulcio unknown field", sig(`"fulcio":{"caData":"QQ==","oidcIssuer":"i","subjectEmail":"e","x":1},"rekorPublicKeyData":"QQ=="`), ErrUnknownKey, "default[0].fulcio.x", ""},
		{"pki no subject", sig(`"pki":{"caRootsData":"QQ=="}`), ErrMissing, "default[0].pki", "subjectEmail"},
		{"pki no roots", sig(`"pki":{"subjectEmail":"e"}`), ErrMissing, "default[0].pki", "caRootsPath"},
		{"pki two intermediates", sig(`"pki":{"caRootsData":"QQ==","caIntermediatesData":"QQ==","caIntermediatesPath":"/x","subjectEmail":"e"}`), ErrConflict, "default[0].pki", ""},
		{"verifier refuses the key", sig(`"keyData":"` + b64("broken") + `"`), ErrInvalid, "default[0]", "no PEM block"},
		{"unknown identity", sig(key + `,"signedIdentity":{"type":"matchAnything"}`), ErrUnknownType, "default[0].signedIdentity.type", "matchAnything"},
		{"identity extra field", sig(key + `,"signedIdentity":{"type":"matchExact","dockerReference":"a:b"}`), ErrUnknownKey, "default[0].signedIdentity.dockerReference", ""},
		{"identity null", sig(key + `,"signedIdentity":null`), ErrInvalid, "default[0].signedIdentity", ""},
		{"exactReference missing", sig(key + `,"signedIdentity":{"type":"exactReference"}`), ErrMissing, "default[0].signedIdentity.dockerReference", ""},
		{"exactReference name only", sig(key + `,"signedIdentity":{"type":"exactReference","dockerReference":"busybox"}`), ErrInvalid, "default[0].signedIdentity.dockerReference", "busybox"},
		{"exactRepository invalid", sig(key + `,"signedIdentity":{"type":"exactRepository","dockerRepository":"UPPER"}`), ErrInvalid, "default[0].signedIdentity.dockerRepository", "UPPER"},
		{"remap bad prefix", sig(key + `,"signedIdentity":{"type":"remapIdentity","prefix":"busybox:latest","signedPrefix":"quay.io"}`), ErrInvalid, "default[0].signedIdentity.prefix", "busybox:latest"},
		{"remap no signedPrefix", sig(key + `,"signedIdentity":{"type":"remapIdentity","prefix":"quay.io"}`), ErrMissing, "default[0].signedIdentity.signedPrefix", ""},
		{"signedBy no keyType", `{"default":[{"type":"signedBy","keyPath":"` + dir + `/a.pub"}]}`, ErrMissing, "default[0].keyType", ""},
		{"signedBy X509", `{"default":[{"type":"signedBy","keyType":"X509Certificates","keyPath":"` + dir + `/a.pub"}]}`, ErrInvalid, "default[0].keyType", "X509Certificates"},
		{"signedBy no key", `{"default":[{"type":"signedBy","keyType":"GPGKeys"}]}`, ErrMissing, "default[0]", ""},
		{"signedBy keyDatas", `{"default":[{"type":"signedBy","keyType":"GPGKeys","keyDatas":["QQ=="]}]}`, ErrUnknownKey, "default[0].keyDatas", ""},
		{"notation no level", `{"default":[{"type":"notationSigned","trustStore":{"caData":["QQ=="]},"trustedIdentities":["*"],"signatureVerification":{}}]}`, ErrMissing, "default[0].signatureVerification.level", ""},
		{"notation bad level", `{"default":[{"type":"notationSigned","trustStore":{"caData":["QQ=="]},"trustedIdentities":["*"],"signatureVerification":{"level":"lax"}}]}`, ErrInvalid, "default[0].signatureVerification.level", "lax"},
		{"notation override", `{"default":[{"type":"notationSigned","trustStore":{"caData":["QQ=="]},"trustedIdentities":["*"],"signatureVerification":{"level":"strict","override":{}}}]}`, ErrUnknownKey, "default[0].signatureVerification.override", ""},
		{"notation no store", `{"default":[{"type":"notationSigned","trustedIdentities":["*"],"signatureVerification":{"level":"strict"}}]}`, ErrMissing, "default[0].trustStore", ""},
		{"notation empty store", `{"default":[{"type":"notationSigned","trustStore":{},"trustedIdentities":["*"],"signatureVerification":{"level":"strict"}}]}`, ErrMissing, "default[0].trustStore", ""},
		{"notation no identities", `{"default":[{"type":"notationSigned","trustStore":{"caData":["QQ=="]},"signatureVerification":{"level":"strict"}}]}`, ErrMissing, "default[0].trustedIdentities", ""},
		{"notation bad identity", `{"default":[{"type":"notationSigned","trustStore":{"caData":["QQ=="]},"trustedIdentities":["CN=x"],"signatureVerification":{"level":"strict"}}]}`, ErrInvalid, "default[0].trustedIdentities[0]", "CN=x"},
		{"notation star and more", `{"default":[{"type":"notationSigned","trustStore":{"caData":["QQ=="]},"trustedIdentities":["*","x509.subject: CN=a"],"signatureVerification":{"level":"strict"}}]}`, ErrInvalid, "default[0].trustedIdentities[0]", ""},
		{"notation skip with store", `{"default":[{"type":"notationSigned","trustStore":{"caData":["QQ=="]},"signatureVerification":{"level":"skip"}}]}`, ErrConflict, "default[0].trustStore", ""},
		{"notation relative path", `{"default":[{"type":"notationSigned","trustStore":{"caPaths":["ca.pem"]},"trustedIdentities":["*"],"signatureVerification":{"level":"strict"}}]}`, ErrRelativePath, "default[0].trustStore.caPaths[0]", "ca.pem"},
		{"scope not expanded", `{"default":[{"type":"reject"}],"transports":{"docker":{"busybox/x":[{"type":"reject"}]}}}`, ErrScope, `transports.docker."busybox/x"`, "docker.io/busybox/x"},
		{"scope library missing", `{"default":[{"type":"reject"}],"transports":{"docker":{"docker.io/busybox:1":[{"type":"reject"}]}}}`, ErrScope, `transports.docker."docker.io/busybox:1"`, "docker.io/library/busybox:1"},
		{"scope single-label host", `{"default":[{"type":"reject"}],"transports":{"docker":{"busybox":[{"type":"reject"}]}}}`, ErrScope, "", "busybox"},
		{"scope index.docker.io", `{"default":[{"type":"reject"}],"transports":{"docker":{"index.docker.io/library":[{"type":"reject"}]}}}`, ErrScope, "", "index.docker.io"},
		{"scope bad wildcard", `{"default":[{"type":"reject"}],"transports":{"docker":{"example*.*.com":[{"type":"reject"}]}}}`, ErrScope, `transports.docker."example*.*.com"`, "example*.*.com"},
		{"scope wildcard port", `{"default":[{"type":"reject"}],"transports":{"docker":{"*.example.com:5000":[{"type":"reject"}]}}}`, ErrScope, "", "*.example.com:5000"},
		{"scope tag and digest", `{"default":[{"type":"reject"}],"transports":{"docker":{"docker.io/library/a:1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef":[{"type":"reject"}]}}}`, ErrScope, "", ""},
		{"scope uppercase", `{"default":[{"type":"reject"}],"transports":{"docker":{"quay.io/Org":[{"type":"reject"}]}}}`, ErrScope, "", "quay.io/Org"},
		{"empty scope list", `{"default":[{"type":"reject"}],"transports":{"docker":{"quay.io":[]}}}`, ErrInvalid, `transports.docker."quay.io"`, ""},
		{"transport not object", `{"default":[{"type":"reject"}],"transports":{"docker":[]}}`, ErrSyntax, "transports.docker", ""},
		{"ignored transport still strict", `{"default":[{"type":"reject"}],"transports":{"atomic":{"a":[{"type":"nope"}]}}}`, ErrUnknownType, "transports.atomic.a[0].type", "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), "/etc/containers", fakeOptions(nil))
			if err == nil {
				t.Fatal("parsed")
			}
			t.Log(err)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %q is not %v", err, tc.kind)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not *Error", err)
			}
			if tc.path != "" && pe.Path != tc.path {
				t.Errorf("Path = %q, want %q (%v)", pe.Path, tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("%q does not mention %q", err, tc.mention)
			}
		})
	}
}

func TestParseNoVerifier(t *testing.T) {
	for _, text := range []string{
		`{"default":[{"type":"sigstoreSigned","keyData":"QQ=="}]}`,
		`{"default":[{"type":"notationSigned","trustStore":{"caData":["QQ=="]},"trustedIdentities":["*"],"signatureVerification":{"level":"audit"}}]}`,
	} {
		if _, err := Parse([]byte(text), "", Options{}); !errors.Is(err, ErrNoVerifier) {
			t.Errorf("%s: error %v, want ErrNoVerifier", text, err)
		}
	}
	// Requirements that build no verifier load without one.
	mustParse(t, `{"default":[{"type":"reject"}],"transports":{"docker":{"a.io":[{"type":"notationSigned","signatureVerification":{"level":"skip"}}]}}}`, Options{})
}

func TestLoadLimits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(path, []byte(`{"default":[{"type":"reject"}]}`+strings.Repeat(" ", MaxPolicySize)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, Options{})
	var pe *Error
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &pe) || pe.File != path {
		t.Errorf("Load of a large file: %v", err)
	}
	_, err = Load(filepath.Join(dir, "none.json"), Options{})
	if !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("Load of a missing file: %v", err)
	}
	if _, err := Parse(make([]byte, MaxPolicySize+1), "", Options{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Parse of a large policy: %v", err)
	}
}

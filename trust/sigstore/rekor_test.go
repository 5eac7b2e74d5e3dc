package sigstore

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wharfproject/wharf/trust"
)

// rekorLog is a stand-in Rekor: a key that signs entry timestamps.
type rekorLog struct {
	key   *ecdsa.PrivateKey
	logID string
}

func newRekorLog(t *testing.T) *rekorLog {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(k.Public())
	sum := sha256.Sum256(der)
	return &rekorLog{key: k, logID: fmt.Sprintf("%x", sum)}
}

// entry is a hashedrekord body naming sigB64 and its signed entry timestamp.
func (r *rekorLog) entry(t *testing.T, sigB64 string, at time.Time) (body []byte, set []byte) {
	body = []byte(fmt.Sprintf(`{"apiVersion":"0.0.1","kind":"hashedrekord","spec":{"signature":{"content":%q}}}`, sigB64))
	canon := fmt.Sprintf(`{"body":%q,"integratedTime":%d,"logID":%q,"logIndex":%d}`,
		base64.StdEncoding.EncodeToString(body), at.Unix(), r.logID, 42)
	return body, signBytes(t, r.key, []byte(canon))
}

// withLegacyEntry adds a dev.sigstore.cosign/bundle annotation to a .sig.
func (r *rekorLog) withLegacyEntry(t *testing.T, a trust.Artifact, at time.Time) trust.Artifact {
	body, set := r.entry(t, a.Annotations[annSignature], at)
	rb, _ := json.Marshal(map[string]any{"SignedEntryTimestamp": set, "Payload": map[string]any{
		"body": base64.StdEncoding.EncodeToString(body), "integratedTime": at.Unix(), "logIndex": 42, "logID": r.logID}})
	ann := map[string]string{}
	for k, v := range a.Annotations {
		ann[k] = v
	}
	ann[annBundle] = string(rb)
	a.Annotations = ann
	return a
}

// withBundleEntry adds a tlog entry with an inclusion promise to a bundle.
func (r *rekorLog) withBundleEntry(t *testing.T, a trust.Artifact, at time.Time) trust.Artifact {
	var b map[string]any
	if err := json.Unmarshal(a.Payload, &b); err != nil {
		t.Fatal(err)
	}
	sig := b["dsseEnvelope"].(map[string]any)["signatures"].([]any)[0].(map[string]any)["sig"].(string)
	body, set := r.entry(t, sig, at)
	id, _ := hex.DecodeString(r.logID)
	b["verificationMaterial"].(map[string]any)["tlogEntries"] = []any{map[string]any{
		"logIndex": "42", "logId": map[string]any{"keyId": base64.StdEncoding.EncodeToString(id)},
		"kindVersion":       map[string]any{"kind": "hashedrekord", "version": "0.0.1"},
		"integratedTime":    fmt.Sprint(at.Unix()),
		"inclusionPromise":  map[string]any{"signedEntryTimestamp": base64.StdEncoding.EncodeToString(set)},
		"canonicalizedBody": base64.StdEncoding.EncodeToString(body),
	}}
	a.Payload, _ = json.Marshal(b)
	return a
}

func TestRekor(t *testing.T) {
	fx := loadFixtures(t, "testdata")
	log, other := newRekorLog(t), newRekorLog(t)
	inside := fx.leaf.NotBefore.Add(time.Hour)
	afterExpiry := fx.leaf.NotAfter.Add(time.Hour)
	for _, name := range []string{"cert-sig", "cert-bundle"} {
		isBundle := strings.HasSuffix(name, "bundle")
		addBy := func(r *rekorLog) func(*testing.T, trust.Artifact, time.Time) trust.Artifact {
			if isBundle {
				return r.withBundleEntry
			}
			return r.withLegacyEntry
		}
		add := addBy(log)
		// another key's SET under the configured log's ID
		forged := addBy(&rekorLog{key: other.key, logID: log.logID})
		for _, tc := range []struct {
			name    string
			rekor   *rekorLog
			art     func(trust.Artifact) trust.Artifact
			wantErr string
		}{
			// the certificate is checked at the integrated time, not "now"
			// (now is past NotAfter): without the tlog time this fails.
			{name: "accepted at integrated time", rekor: log, art: func(a trust.Artifact) trust.Artifact { return add(t, a, inside) }},
			// the SET check: the configured log did not sign it
			{name: "another Rekor key", rekor: other, art: func(a trust.Artifact) trust.Artifact { return add(t, a, inside) },
				wantErr: "no transparency-log entry verifies"},
			// the SET signature check: the log ID is the configured log's,
			// the SET is another key's
			{name: "forged SET", rekor: log, art: func(a trust.Artifact) trust.Artifact { return forged(t, a, inside) },
				wantErr: "no transparency-log entry verifies"},
			// the SET signature check: the integrated time was changed
			// after the log signed it
			{name: "integrated time changed", rekor: log, art: func(a trust.Artifact) trust.Artifact {
				a = add(t, a, inside)
				moved := fmt.Sprint(inside.Add(time.Minute).Unix())
				if isBundle {
					a.Payload = []byte(strings.Replace(string(a.Payload), fmt.Sprint(inside.Unix()), moved, 1))
				} else {
					a.Annotations[annBundle] = strings.Replace(a.Annotations[annBundle], fmt.Sprint(inside.Unix()), moved, 1)
				}
				return a
			}, wantErr: "no transparency-log entry verifies"},
			// a Rekor key makes the entry mandatory
			{name: "no entry", rekor: log, art: func(a trust.Artifact) trust.Artifact { return a },
				wantErr: "has no transparency-log entry"},
			// the validity check at the integrated time
			{name: "integrated after expiry", rekor: log, art: func(a trust.Artifact) trust.Artifact { return add(t, a, afterExpiry) },
				wantErr: "certificate is not valid at"},
			// the body binding: a genuine entry, but for another signature
			{name: "entry of another signature", rekor: log, art: func(a trust.Artifact) trust.Artifact {
				a = add(t, a, inside)
				if ann := a.Annotations[annBundle]; ann != "" {
					var rb map[string]any
					_ = json.Unmarshal([]byte(ann), &rb)
					body, set := log.entry(t, "b3RoZXI=", inside)
					rb["SignedEntryTimestamp"] = set
					rb["Payload"].(map[string]any)["body"] = base64.StdEncoding.EncodeToString(body)
					nb, _ := json.Marshal(rb)
					a.Annotations[annBundle] = string(nb)
				} else {
					a = withOtherBody(t, log, a, inside)
				}
				return a
			}, wantErr: "no transparency-log entry verifies"},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				img, a := fx.artifact(t, name)
				a = tc.art(a)
				v, err := New(Config{Fulcio: &Fulcio{CAPEM: append(append([]byte{}, fx.root...), fx.inter...), OIDCIssuer: issuer, SubjectEmail: email},
					RekorKeys: [][]byte{pubPEM(t, tc.rekor.key.Public())}, Now: func() time.Time { return afterExpiry }})
				if err != nil {
					t.Fatal(err)
				}
				f := v.Verify(context.Background(), img, a)
				if tc.wantErr != "" {
					if f.Verified || !strings.Contains(f.Error, tc.wantErr) {
						t.Fatalf("want %q, got %+v", tc.wantErr, f)
					}
					return
				}
				if !f.Verified || len(f.Warnings) != 0 || len(f.Timestamps) != 1 ||
					f.Timestamps[0].Type != "Tlog" || !f.Timestamps[0].Timestamp.Equal(inside) {
					t.Fatalf("want verified at %s with no warning, got %+v", inside, f)
				}
			})
		}
	}
}

// withOtherBody replaces a bundle's tlog entry by one, correctly signed by
// the log, for another signature.
func withOtherBody(t *testing.T, log *rekorLog, a trust.Artifact, at time.Time) trust.Artifact {
	var b map[string]any
	_ = json.Unmarshal(a.Payload, &b)
	body, set := log.entry(t, "b3RoZXI=", at)
	e := b["verificationMaterial"].(map[string]any)["tlogEntries"].([]any)[0].(map[string]any)
	e["canonicalizedBody"] = base64.StdEncoding.EncodeToString(body)
	e["inclusionPromise"] = map[string]any{"signedEntryTimestamp": base64.StdEncoding.EncodeToString(set)}
	a.Payload, _ = json.Marshal(b)
	return a
}

package server

import (
	"testing"

	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// moby adds Identity at API 1.53; wharf serves it, and its Trust beside
// it, at every version (issue 21), so that clients that negotiate
// 1.41–1.50 (the docker CLI 28) read a verified signature too.
func TestIdentityAndTrustAtEveryVersion(t *testing.T) {
	for _, v := range []string{"1.24", "1.41", "1.44", "1.50", "1.52", "1.53", "1.55"} {
		t.Run(v, func(t *testing.T) {
			insp := sampleInspect()
			insp.Trust = &types.Trust{Decision: "accepted", Scope: "docker.io", Signatures: []types.TrustSignature{{
				SignatureIdentity: image.SignatureIdentity{Name: "cosign bundle", SignatureType: "bundle-v0.3"}, Verified: true}}}
			insp.Identity = insp.Trust.Identity()
			b := &fakeBackend{inspect: func(string, types.InspectOptions) (*types.ImageInspect, error) { return insp, nil }}
			rec := do(t, b, "GET", "/v"+v+"/images/busybox/json", nil, nil)
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			m := decodeObject(t, rec.Body.Bytes())
			want := `{"Signature":[{"Name":"cosign bundle","SignatureType":"bundle-v0.3"}]}`
			if got := string(m["Identity"]); got != want {
				t.Errorf("Identity = %s, want %s", got, want)
			}
			if _, ok := m["Trust"]; !ok {
				t.Errorf("no Trust in %s", rec.Body)
			}
		})
	}
}

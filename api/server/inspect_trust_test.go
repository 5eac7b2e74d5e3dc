package server

import (
	"testing"

	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// moby adds Identity at API 1.53; wharf serves it, and its Trust beside
// it, at every version until its own API reaches 1.53 (issue 21), so that
// today's clients (which negotiate 1.41–1.50) can read a verified
// signature. Before, the gate dropped Identity below 1.53.
func TestIdentityAndTrustAtEveryVersion(t *testing.T) {
	for _, v := range []string{"1.24", "1.41", "1.44", "1.50"} {
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
			if got := string(m["Identity"]); got != `{"Signature":[{"Name":"cosign bundle","SignatureType":"bundle-v0.3"}]}` {
				t.Errorf("Identity = %s", got)
			}
			if _, ok := m["Trust"]; !ok {
				t.Errorf("no Trust in %s", rec.Body)
			}
		})
	}
}

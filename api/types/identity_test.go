package types

import (
	"encoding/json"
	"testing"

	"github.com/moby/moby/api/types/image"
)

func TestImageIdentity(t *testing.T) {
	signed := &Trust{Decision: "accepted", Signatures: []TrustSignature{{
		SignatureIdentity: image.SignatureIdentity{Name: "cosign bundle", SignatureType: "bundle-v0.3"}, Verified: true}}}
	tests := []struct {
		name        string
		trust       *Trust
		repoDigests []string
		want        string
	}{
		{"nothing", nil, nil, "null"},
		{"unsigned, never pulled", &Trust{Decision: "no-policy"}, nil, "null"},
		{"signed only", signed, nil, `{"Signature":[{"Name":"cosign bundle","SignatureType":"bundle-v0.3"}]}`},
		{"pulled", nil, []string{"docker.io/library/busybox@sha256:" + sixtyFour("a")},
			`{"Pull":[{"Repository":"docker.io/library/busybox"}]}`},
		{"pulled and pushed, one repository twice", signed, []string{
			"busybox@sha256:" + sixtyFour("a"),
			"127.0.0.1:5000/team/app@sha256:" + sixtyFour("b"),
			"docker.io/library/busybox@sha256:" + sixtyFour("c"),
			"not a reference",
		}, `{"Signature":[{"Name":"cosign bundle","SignatureType":"bundle-v0.3"}],"Pull":[{"Repository":"docker.io/library/busybox"},{"Repository":"127.0.0.1:5000/team/app"}]}`},
	}
	for _, tc := range tests {
		b, err := json.Marshal(ImageIdentity(tc.trust, tc.repoDigests))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, b, tc.want)
		}
	}
}

func sixtyFour(c string) string {
	s := ""
	for range 64 {
		s += c
	}
	return s
}

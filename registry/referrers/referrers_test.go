package referrers

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/transport"
)

func FuzzReferrersIndex(f *testing.F) {
	d := "sha256:" + strings.Repeat("a", 64)
	for _, s := range []string{
		`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + d + `","size":10,"artifactType":"x","annotations":{"a":"b"}}]}`,
		`{"manifests":[{"digest":"sha256:zz","size":1,"mediaType":"m"}]}`,
		`{"manifests":[{"digest":"` + d + `","size":-1,"mediaType":"m"}]}`,
		`{"manifests":null}`, `[]`, `null`,
	} {
		f.Add(s, "x", false)
	}
	f.Fuzz(func(t *testing.T, body, artifactType string, filtered bool) {
		var idx ocispec.Index
		if json.Unmarshal([]byte(body), &idx) != nil {
			return
		}
		refs, err := referrersFromIndex("fuzz", digest.Digest(d), idx.Manifests, SourceAPI, artifactType, filtered)
		if err != nil {
			if !errors.Is(err, transport.ErrUpstream) {
				t.Errorf("error not ErrUpstream: %v", err)
			}
			return
		}
		for _, r := range refs {
			if r.Descriptor.Digest.Validate() != nil || r.Descriptor.Size < 0 || r.Descriptor.Size > maxManifestSize || r.Descriptor.MediaType == "" {
				t.Errorf("accepted %+v", r.Descriptor)
			}
			if !filtered && artifactType != "" && r.Descriptor.ArtifactType != artifactType {
				t.Errorf("filter %q kept %q", artifactType, r.Descriptor.ArtifactType)
			}
		}
	})
}

// A referrer must refer to the subject it was listed for; under a cosign
// tag it may name none.
func TestCheckReferrerSubject(t *testing.T) {
	m, v := digest.FromString("M"), digest.FromString("V")
	sig := digest.FromString("sig")
	for _, tc := range []struct {
		name    string
		ref     Referrer
		subject *ocispec.Descriptor
		want    string // "" = accepted
	}{
		{"listed, names its subject", Referrer{Subject: m}, &ocispec.Descriptor{Digest: m}, ""},
		{"listed, names another", Referrer{Subject: m}, &ocispec.Descriptor{Digest: v}, "refers to " + v.String()},
		{"listed, names none", Referrer{Subject: m}, nil, "names no subject"},
		{"cosign tag, names none", Referrer{Subject: m, Tag: "sha256-x.sig"}, nil, ""},
		{"cosign tag, names its subject", Referrer{Subject: m, Tag: "sha256-x.sig"}, &ocispec.Descriptor{Digest: m}, ""},
		{"cosign tag, names another", Referrer{Subject: m, Tag: "sha256-x.sig"}, &ocispec.Descriptor{Digest: v}, "refers to " + v.String()},
	} {
		tc.ref.Descriptor.Digest = sig
		err := CheckSubject("h", tc.ref, tc.subject)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, transport.ErrUpstream) || !strings.Contains(err.Error(), "registry h")):
			t.Errorf("%s: %v, want ErrUpstream naming registry h and %q", tc.name, err, tc.want)
		}
	}
}

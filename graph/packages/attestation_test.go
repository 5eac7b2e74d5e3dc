package packages

import (
	"testing"

	"github.com/containerd/errdefs"
)

const spdxStatement = `{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://spdx.dev/Document","subject":[],
"predicate":{"spdxVersion":"SPDX-2.3","packages":[
 {"name":"app","SPDXID":"SPDXRef-DocumentRoot-Image-app"},
 {"name":"bash","versionInfo":"5.2.15-2+b2","licenseDeclared":"GPL-3.0-or-later","externalRefs":[{"referenceCategory":"PACKAGE-MANAGER","referenceType":"purl","referenceLocator":"pkg:deb/debian/bash@5.2.15-2%2Bb2?arch=amd64&distro=debian-12"}]},
 {"name":"golang.org/x/sys","versionInfo":"v0.20.0","externalRefs":[{"referenceType":"purl","referenceLocator":"pkg:golang/golang.org/x/sys@v0.20.0"}]}
]}}`

const cdxStatement = `{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://cyclonedx.org/bom",
"predicate":{"bomFormat":"CycloneDX","components":[{"type":"library","name":"musl","version":"1.2.5-r0","purl":"pkg:apk/alpine/musl@1.2.5-r0?arch=x86_64"},{"type":"file","name":"/etc/passwd"}]}}`

func TestFromStatement(t *testing.T) {
	ps, err := FromStatement([]byte(spdxStatement), 10)
	if err != nil || len(ps) != 2 {
		t.Fatalf("%v %+v", err, ps)
	}
	if ps[0].Type != "deb" || ps[0].Arch != "amd64" || ps[0].Licenses[0] != "GPL-3.0-or-later" || ps[1].Type != "go-module" || ps[1].Name != "golang.org/x/sys" {
		t.Fatalf("%+v", ps)
	}
	ps, err = FromStatement([]byte(cdxStatement), 10)
	if err != nil || len(ps) != 1 || ps[0].Type != "apk" || ps[0].Version != "1.2.5-r0" {
		t.Fatalf("%v %+v", err, ps)
	}
	if _, err := FromStatement([]byte(spdxStatement), 1); !errdefs.IsResourceExhausted(err) {
		t.Fatalf("cap: %v", err)
	}
	for _, bad := range []string{`{`, `{"predicateType":"https://slsa.dev/provenance/v1","predicate":{}}`, `{"predicateType":"https://spdx.dev/Document","predicate":[]}`} {
		if _, err := FromStatement([]byte(bad), 10); !errdefs.IsInvalidArgument(err) {
			t.Fatalf("%s: %v", bad, err)
		}
	}
}

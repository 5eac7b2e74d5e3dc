package sbom

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"

	"github.com/wharfproject/wharf/api/types"
)

var sample = &types.ImagePackages{
	Image: "localhost:5000/app:1", Digest: "sha256:abc",
	Packages: []types.Package{
		{Name: "bash", Version: "5.2.15-2+b2", Type: "deb", PURL: "pkg:deb/debian/bash@5.2.15-2%2Bb2?arch=amd64", Licenses: []string{"GPL-3"}},
		{Name: "github.com/a/b", Version: "v1.0.0", Type: "go-module", PURL: "pkg:golang/github.com/a/b@v1.0.0"},
	},
}

func TestCycloneDXReadsBack(t *testing.T) {
	var buf bytes.Buffer
	if err := CycloneDX(&buf, sample, Tool{"wharf", "dev"}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(&buf, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatal(err)
	}
	if bom.Components == nil || len(*bom.Components) != 2 {
		t.Fatalf("%+v", bom.Components)
	}
	c := (*bom.Components)[0]
	if c.Name != "bash" || c.Version != "5.2.15-2+b2" || c.PackageURL != sample.Packages[0].PURL || (*c.Properties)[0].Value != "deb" {
		t.Fatalf("%+v", c)
	}
	if bom.Metadata.Component.Type != cdx.ComponentTypeContainer {
		t.Fatalf("%+v", bom.Metadata.Component)
	}
}

func TestSPDXReadsBack(t *testing.T) {
	var buf bytes.Buffer
	if err := SPDX(&buf, sample, Tool{"wharf", "dev"}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	var doc spdx.Document
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) != 3 || len(doc.Relationships) != 3 {
		t.Fatalf("%+v", doc)
	}
	p := doc.Packages[2]
	if p.PackageName != "github.com/a/b" || p.PackageExternalReferences[0].Locator != sample.Packages[1].PURL {
		t.Fatalf("%+v", p)
	}
	for _, p := range doc.Packages {
		for _, r := range p.PackageSPDXIdentifier {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
				t.Fatalf("SPDX id %q", p.PackageSPDXIdentifier)
			}
		}
	}
}

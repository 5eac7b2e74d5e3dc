// Package sbom writes an image's package list as the SBOM formats grype,
// trivy and syft read: CycloneDX JSON (cyclonedx-go) and SPDX 2.3 JSON
// (tools-golang), the libraries and versions syft writes them with.
package sbom

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	spdxcommon "github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"

	"github.com/wharfproject/wharf/api/types"
)

// Tool names the writer in each document's creation information.
type Tool struct{ Name, Version string }

// typeProperty carries a package's type where its purl does not say it
// (syft's property name, which syft convert reads back).
const typeProperty = "syft:package:type"

// CycloneDX writes pkgs as a CycloneDX JSON BOM of the container image.
func CycloneDX(w io.Writer, pkgs *types.ImagePackages, tool Tool, now time.Time) error {
	bom := cdx.NewBOM()
	bom.SerialNumber = ""
	comps := make([]cdx.Component, 0, len(pkgs.Packages))
	for i, p := range pkgs.Packages {
		c := cdx.Component{
			BOMRef:     fmt.Sprintf("pkg-%d", i),
			Type:       cdx.ComponentTypeLibrary,
			Name:       p.Name,
			Version:    p.Version,
			PackageURL: p.PURL,
			Properties: &[]cdx.Property{{Name: typeProperty, Value: p.Type}},
		}
		if len(p.Licenses) > 0 {
			var ls cdx.Licenses
			for _, l := range p.Licenses {
				ls = append(ls, cdx.LicenseChoice{License: &cdx.License{Name: l}})
			}
			c.Licenses = &ls
		}
		comps = append(comps, c)
	}
	bom.Metadata = &cdx.Metadata{
		Timestamp: now.UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: tool.Name, Version: tool.Version,
		}}},
		Component: &cdx.Component{
			BOMRef: "image", Type: cdx.ComponentTypeContainer,
			Name: pkgs.Image, Version: pkgs.Digest,
		},
	}
	bom.Components = &comps
	enc := cdx.NewBOMEncoder(w, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	return enc.Encode(bom)
}

// spdxIDChars are the characters an SPDX identifier may hold.
var spdxIDChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func spdxID(parts ...string) spdxcommon.ElementID {
	return spdxcommon.ElementID(spdxIDChars.ReplaceAllString(strings.Join(parts, "-"), "-"))
}

// SPDX writes pkgs as an SPDX 2.3 JSON document: the image as its root
// package (purpose CONTAINER), which CONTAINS each package.
func SPDX(w io.Writer, pkgs *types.ImagePackages, tool Tool, now time.Time) error {
	root := &spdx.Package{
		PackageName:             pkgs.Image,
		PackageSPDXIdentifier:   spdxID("DocumentRoot", "Image", pkgs.Image),
		PackageVersion:          pkgs.Digest,
		PackageDownloadLocation: "NOASSERTION",
		PrimaryPackagePurpose:   "CONTAINER",
		PackageSupplier:         &spdxcommon.Supplier{Supplier: "NOASSERTION"},
	}
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      pkgs.Image,
		DocumentNamespace: "https://spdx.org/spdxdocs/" + string(spdxID(tool.Name, pkgs.Image, strings.TrimPrefix(pkgs.Digest, "sha256:"))),
		CreationInfo: &spdx.CreationInfo{
			Creators: []spdxcommon.Creator{{CreatorType: "Tool", Creator: tool.Name + "-" + tool.Version}},
			Created:  now.UTC().Format(time.RFC3339),
		},
		Packages: []*spdx.Package{root},
		Relationships: []*spdx.Relationship{{
			RefA:         spdxcommon.DocElementID{ElementRefID: "DOCUMENT"},
			RefB:         spdxcommon.DocElementID{ElementRefID: root.PackageSPDXIdentifier},
			Relationship: spdxcommon.TypeRelationshipDescribe,
		}},
	}
	for i, p := range pkgs.Packages {
		sp := &spdx.Package{
			PackageName:             p.Name,
			PackageSPDXIdentifier:   spdxID("Package", p.Type, p.Name, fmt.Sprint(i)),
			PackageVersion:          p.Version,
			PackageDownloadLocation: "NOASSERTION",
			PackageLicenseConcluded: "NOASSERTION",
			PackageLicenseDeclared:  "NOASSERTION",
			PackageCopyrightText:    "NOASSERTION",
			PackageSupplier:         &spdxcommon.Supplier{Supplier: "NOASSERTION"},
			PackageSourceInfo:       "acquired package info from " + strings.Join(p.Locations, ", "),
		}
		if p.PURL != "" {
			sp.PackageExternalReferences = []*spdx.PackageExternalReference{{
				Category: "PACKAGE-MANAGER", RefType: "purl", Locator: p.PURL,
			}}
		}
		doc.Packages = append(doc.Packages, sp)
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA:         spdxcommon.DocElementID{ElementRefID: root.PackageSPDXIdentifier},
			RefB:         spdxcommon.DocElementID{ElementRefID: sp.PackageSPDXIdentifier},
			Relationship: spdxcommon.TypeRelationshipContains,
		})
	}
	// The v2.3 types carry their own JSON (tags and marshalers); the json
	// package of tools-golang would add its SPDX 3 reader to the binary.
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

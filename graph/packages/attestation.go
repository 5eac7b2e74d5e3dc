package packages

import (
	"encoding/json"
	"fmt"

	"github.com/anchore/packageurl-go"
	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
)

// The in-toto predicate types of the SBOMs an image may carry attached
// (BuildKit writes SPDX; others write CycloneDX).
const (
	PredicateSPDX      = "https://spdx.dev/Document"
	PredicateCycloneDX = "https://cyclonedx.org/bom"
)

// SBOMPredicates are the predicate types FromStatement reads.
var SBOMPredicates = []string{PredicateSPDX, PredicateCycloneDX}

// purlTypes maps a purl's type to Package.Type where syft's names differ.
var purlTypes = map[string]string{"golang": types.PackageTypeGoModule}

// FromStatement reads the packages of an in-toto statement whose
// predicate is an SPDX 2.x document or a CycloneDX BOM (JSON). A package
// is kept when it has a package URL, which says its type; the document's
// other elements (the image itself, files) have none. The statement was
// read within the attestation reader's cap (32 MiB); max caps the
// packages.
func FromStatement(b []byte, max int) ([]types.Package, error) {
	var st struct {
		PredicateType string          `json:"predicateType"`
		Predicate     json.RawMessage `json:"predicate"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("in-toto statement: %v%.0w", err, errdefs.ErrInvalidArgument)
	}
	var out []types.Package
	add := func(name, version, purl string, licenses []string) error {
		p, err := packageurl.FromString(purl)
		if purl == "" || err != nil || name == "" {
			return nil
		}
		if len(out) >= max {
			return fmt.Errorf("SBOM: more than %d packages: %w", max, ErrTooLarge)
		}
		typ := p.Type
		if t, ok := purlTypes[typ]; ok {
			typ = t
		}
		out = append(out, types.Package{Name: name, Version: version, Type: typ, PURL: purl, Arch: p.Qualifiers.Map()["arch"], Licenses: licenses})
		return nil
	}
	switch st.PredicateType {
	case PredicateSPDX:
		var doc struct {
			Packages []struct {
				Name, VersionInfo, LicenseDeclared string
				ExternalRefs                       []struct {
					ReferenceType, ReferenceLocator string
				}
			}
		}
		if err := json.Unmarshal(st.Predicate, &doc); err != nil {
			return nil, fmt.Errorf("SPDX predicate: %v%.0w", err, errdefs.ErrInvalidArgument)
		}
		for _, p := range doc.Packages {
			purl := ""
			for _, r := range p.ExternalRefs {
				if r.ReferenceType == "purl" {
					purl = r.ReferenceLocator
					break
				}
			}
			var lic []string
			if p.LicenseDeclared != "" && p.LicenseDeclared != "NOASSERTION" && p.LicenseDeclared != "NONE" {
				lic = []string{p.LicenseDeclared}
			}
			if err := add(p.Name, p.VersionInfo, purl, lic); err != nil {
				return nil, err
			}
		}
	case PredicateCycloneDX:
		var bom struct {
			Components []struct {
				Name, Version, Group, Purl string
			}
		}
		if err := json.Unmarshal(st.Predicate, &bom); err != nil {
			return nil, fmt.Errorf("CycloneDX predicate: %v%.0w", err, errdefs.ErrInvalidArgument)
		}
		for _, c := range bom.Components {
			name := c.Name
			if c.Group != "" {
				name = c.Group + "/" + c.Name
			}
			if err := add(name, c.Version, c.Purl, nil); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("predicate type %q is not an SBOM%.0w", st.PredicateType, errdefs.ErrInvalidArgument)
	}
	sortPackages(out)
	if out == nil {
		out = []types.Package{}
	}
	return out, nil
}

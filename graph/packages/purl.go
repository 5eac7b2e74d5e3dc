package packages

import (
	"sort"
	"strings"

	"github.com/anchore/packageurl-go"
)

// purl writes a package URL as syft does (packageurl-go sorts the
// qualifiers): empty values dropped, distro=ID-VERSION_ID (or
// ID-BUILD_ID) when the distro is known.
func purl(typ, namespace, name, version string, quals map[string]string, rel *Release) string {
	keys := make([]string, 0, len(quals))
	for k := range quals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var q packageurl.Qualifiers
	for _, k := range keys {
		if quals[k] != "" {
			q = append(q, packageurl.Qualifier{Key: k, Value: quals[k]})
		}
	}
	if rel != nil {
		var d []string
		if rel.ID != "" {
			d = append(d, rel.ID)
		}
		if rel.VersionID != "" {
			d = append(d, rel.VersionID)
		} else if rel.BuildID != "" {
			d = append(d, rel.BuildID)
		}
		if len(d) > 0 {
			q = append(q, packageurl.Qualifier{Key: "distro", Value: strings.Join(d, "-")})
		}
	}
	return packageurl.NewPackageURL(typ, namespace, name, version, q, "").ToString()
}

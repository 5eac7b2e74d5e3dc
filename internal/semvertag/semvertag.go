// Package semvertag reads container image tags as semver versions, in the
// forms Docker tags take (an optional leading v, one to three numeric
// parts, -prerelease, +build), and sorts them: the one reading of "a
// version" that `wharf tags --sort semver`, the sync filter and the update
// check's newer versions share.
package semvertag

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Sort sorts tags semver-aware, ascending, so that the last line
// is the highest version (`wharf tags --sort semver NAME | tail -1`):
//
//   - tags that are not versions first, lexically (latest, edge, sha256-…);
//   - then versions by semver 2.0 precedence, in the forms Docker tags take:
//     an optional leading v, one to three numeric parts (3, 3.20 and 3.20.0
//     rank alike: missing parts are 0), an optional -prerelease and
//     +build. A suffix such as 1.25-alpine is a prerelease to semver, so it
//     ranks before 1.25;
//   - equal precedence (3 and 3.0.0, v1 and 1, builds): lexically.
func Sort(tags []string) {
	keys := make(map[string]*Version, len(tags))
	for _, t := range tags {
		keys[t] = Parse(t)
	}
	slices.SortStableFunc(tags, func(a, b string) int {
		ka, kb := keys[a], keys[b]
		switch {
		case ka == nil && kb == nil:
			return strings.Compare(a, b)
		case ka == nil:
			return -1
		case kb == nil:
			return 1
		}
		if c := ka.Compare(kb); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
}

// semverTag is the version forms Sort knows. Numeric parts are
// at most 18 digits, so they fit an int64.
var semverTag = regexp.MustCompile(`^v?(0|[1-9][0-9]{0,17})(?:\.(0|[1-9][0-9]{0,17}))?(?:\.(0|[1-9][0-9]{0,17}))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$`)

// Version is a tag read as a version.
type Version struct {
	Nums [3]int64
	Pre  []string // nil: a release

	// The tag's shape, which the sort ignores and the newer-version check
	// keeps: a leading v, how many numeric parts were written (1 to 3), and
	// the text after the first hyphen (prerelease, variant or both: "rc1",
	// "alpine", "rc1-alpine"; "" for none).
	V      bool
	Parts  int
	Suffix string
}

// Parse reads t as a version; nil when it is not one.
func Parse(t string) *Version {
	m := semverTag.FindStringSubmatch(t)
	if m == nil {
		return nil
	}
	k := &Version{V: t[0] == 'v', Suffix: m[4]}
	for i := range 3 {
		if m[1+i] != "" {
			k.Nums[i], _ = strconv.ParseInt(m[1+i], 10, 64)
			k.Parts = i + 1
		}
	}
	if m[4] != "" {
		k.Pre = strings.Split(m[4], ".")
	}
	return k
}

// Compare is semver 2.0 precedence (§11).
func (k *Version) Compare(o *Version) int {
	for i := range 3 {
		if k.Nums[i] != o.Nums[i] {
			if k.Nums[i] < o.Nums[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case k.Pre == nil && o.Pre == nil:
		return 0
	case k.Pre == nil:
		return 1 // a release ranks above its prereleases
	case o.Pre == nil:
		return -1
	}
	for i := 0; i < len(k.Pre) && i < len(o.Pre); i++ {
		if c := comparePrerelease(k.Pre[i], o.Pre[i]); c != 0 {
			return c
		}
	}
	return len(k.Pre) - len(o.Pre)
}

// comparePrerelease compares two prerelease identifiers: numeric ones
// numerically and below alphanumeric ones, which compare in ASCII order.
func comparePrerelease(a, b string) int {
	na, ea := strconv.ParseUint(a, 10, 64)
	nb, eb := strconv.ParseUint(b, 10, 64)
	switch {
	case ea == nil && eb == nil:
		if na == nb {
			return 0
		}
		if na < nb {
			return -1
		}
		return 1
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

package updates

import (
	"github.com/wharfproject/wharf/internal/semvertag"

	"regexp"
	"strings"
)

// Newer versions: which tags of a repository are higher
// versions of the same shape as a local tag, by level. The tags are read
// with the parser the semver sort uses (semvertag.Parse), so `wharf tags
// --sort semver` and `images --check-remote --newer` agree on what a
// version is and how versions rank.
//
// The shape rules:
//
//   - Same precision: 1.25 is offered 1.27, never 1.27.3; 1.25.3 is offered
//     1.25.4 and 1.27.0; 1 is offered 2.
//   - Same leading v: v1.2 is offered v1.3, never 1.3 (and 1.2 never v1.3).
//   - Same variant: the text after the first hyphen that is not a
//     prerelease ("alpine", "alpine3.19", "bookworm-slim") must be equal:
//     1.25-alpine is offered 1.27-alpine, never 1.27 nor 1.27-bookworm.
//   - Pre-releases: a suffix whose first hyphen-separated part is alpha,
//     beta, rc, pre, preview, dev, a or b, optionally followed by digits
//     and dots (rc1, rc.1, beta2), is a pre-release (as Renovate treats
//     them, only offered to an image whose tag is a pre-release itself:
//     1.25.3 is never offered 1.26.0-rc1; 1.26.0-rc1 is offered
//     1.26.0-rc2 and 1.26.0). What follows the pre-release part is its
//     variant (1.26.0-rc1-alpine: pre-release rc1, variant alpine).
//   - Not versions: tags the sort does not read as versions (latest,
//     stable, sha-…), and dates and build numbers — a first part of six
//     digits or more (20240101, 202401011200), or YYYY-MM-DD… — are
//     compared by digest only: no newer version is offered for them and
//     none is offered as one.
//
// The levels: NewerMajor is the highest candidate with a higher first
// part; NewerMinor the highest with the same first part and a higher
// second; NewerPatch the highest with the same first two parts (a higher
// third part, or — for a pre-release — a later pre-release or the release
// of the same numbers). A level the precision cannot express is empty
// (1.25 has no patch level; 1 only a major one).

// newerTags are the newer versions of one tag, per level ("" when none).
type newerTags struct {
	Patch, Minor, Major string
}

var (
	// prereleasePart is a suffix's first part that makes it a pre-release.
	prereleasePart = regexp.MustCompile(`^(?i:alpha|beta|rc|pre|preview|dev|a|b)[0-9.]*$`)
	// dateTag is a date or a build number: not a version here.
	dateTag = regexp.MustCompile(`^v?([0-9]{6,}|[0-9]{4}-[0-9]{2}-[0-9]{2})`)
)

// versionShape is a tag read as a version for the newer-version check.
type versionShape struct {
	key     *semvertag.Version
	pre     string // the pre-release part ("" for a release)
	variant string // the rest of the suffix
}

// parseVersionShape reads t as a version with its shape; ok is false for
// a tag that is not a version here (see the rules above).
func parseVersionShape(t string) (versionShape, bool) {
	if dateTag.MatchString(t) {
		return versionShape{}, false
	}
	k := semvertag.Parse(t)
	if k == nil || strings.Contains(t, "+") {
		return versionShape{}, false
	}
	vs := versionShape{key: k, variant: k.Suffix}
	if k.Suffix != "" {
		first, rest, _ := strings.Cut(k.Suffix, "-")
		if prereleasePart.MatchString(first) {
			vs.pre, vs.variant = first, rest
		}
	}
	return vs, true
}

// sameShape: o is a version of vs's shape (precision, v, variant), and a
// pre-release only when vs is one.
func (vs versionShape) sameShape(o versionShape) bool {
	return o.key.Parts == vs.key.Parts && o.key.V == vs.key.V && o.variant == vs.variant &&
		(o.pre == "" || vs.pre != "")
}

// isVersionTag says whether the newer-version check reads tag as a version.
func isVersionTag(tag string) bool {
	_, ok := parseVersionShape(tag)
	return ok
}

// newerVersions are the tags among tags that are higher versions of
// local's shape, the highest per level. ok is false when local is not a
// version (it is then compared by digest only).
func newerVersions(local string, tags []string) (n newerTags, ok bool) {
	return parseTagVersions(tags).newer(local)
}

// tagVersions is a listing's tags read as versions once, for the newer
// versions of many local tags of one repository.
type tagVersions []versionTag

type versionTag struct {
	name  string
	shape versionShape
}

// parseTagVersions reads tags as versions; tags that are not are left out.
func parseTagVersions(tags []string) tagVersions {
	out := make(tagVersions, 0, len(tags))
	for _, t := range tags {
		if vs, ok := parseVersionShape(t); ok {
			out = append(out, versionTag{name: t, shape: vs})
		}
	}
	return out
}

// newer is newerVersions against these tags.
func (vt tagVersions) newer(local string) (n newerTags, ok bool) {
	lv, ok := parseVersionShape(local)
	if !ok {
		return newerTags{}, false
	}
	var best [3]*semvertag.Version // patch, minor, major
	var names [3]string
	for _, c := range vt {
		cv, t := c.shape, c.name
		if !lv.sameShape(cv) || cv.key.Compare(lv.key) <= 0 {
			continue
		}
		lvl := 0
		switch {
		case cv.key.Nums[0] != lv.key.Nums[0]:
			lvl = 2
		case cv.key.Nums[1] != lv.key.Nums[1]:
			lvl = 1
		}
		// Candidates of equal precedence (1.2.3-RC1 and 1.2.3-rc1): the
		// lexically first, so the answer is stable.
		if b := best[lvl]; b == nil || cv.key.Compare(b) > 0 || (cv.key.Compare(b) == 0 && t < names[lvl]) {
			best[lvl], names[lvl] = cv.key, t
		}
	}
	return newerTags{Patch: names[0], Minor: names[1], Major: names[2]}, true
}

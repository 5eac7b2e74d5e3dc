package mirror

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/internal/semvertag"
)

// maxSyncPattern bounds a tag regex or a semver range: a pattern of a few
// hundred bytes is already unusual; 4 KiB leaves room and keeps RE2's
// compile cost (linear in the pattern) small.
const maxSyncPattern = 4096

// tagFilter selects a source's tags: an explicit list (skopeo YAML's
// images), regexes and semver ranges (all must match), then the latest N
// by semver order.
type tagFilter struct {
	only map[string]bool // nil: every tag
	// noReferrerTags leaves out the tags that hold referrers (the tag
	// schema's sha256-<hex> index, cosign's sha256-<hex>.sig/.att/.sbom):
	// with --with-referrers they travel with their subject, and syncing
	// them as images too would write the same tag twice at once.
	noReferrerTags bool
	regexes        []*regexp.Regexp
	ranges         []*semver.Constraints
	latest         int
}

// compileTagRegex compiles a tag regex as skopeo's images-by-tag-regex
// matches it: unanchored (a caller wanting the whole tag writes ^…$).
func compileTagRegex(s string) (*regexp.Regexp, error) {
	if len(s) > maxSyncPattern {
		return nil, fmt.Errorf("tag regex is %d bytes, more than %d%.0w", len(s), maxSyncPattern, errdefs.ErrInvalidArgument)
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("invalid tag regex %q: %v%.0w", s, err, errdefs.ErrInvalidArgument)
	}
	return re, nil
}

// compileSemverRange parses a range in the syntax of skopeo's
// images-by-semver (Masterminds constraints: ">= 1.2, < 2", "~1.4",
// "^3", "1.2.x || 2.x").
func compileSemverRange(s string) (*semver.Constraints, error) {
	if len(s) > maxSyncPattern {
		return nil, fmt.Errorf("semver range is %d bytes, more than %d%.0w", len(s), maxSyncPattern, errdefs.ErrInvalidArgument)
	}
	c, err := semver.NewConstraint(s)
	if err != nil {
		return nil, fmt.Errorf("invalid semver range %q: %v%.0w", s, err, errdefs.ErrInvalidArgument)
	}
	return c, nil
}

// add appends the filters regex and rng when they are set.
func (f *tagFilter) add(regex, rng string) error {
	if regex != "" {
		re, err := compileTagRegex(regex)
		if err != nil {
			return err
		}
		f.regexes = append(f.regexes, re)
	}
	if rng != "" {
		c, err := compileSemverRange(rng)
		if err != nil {
			return err
		}
		f.ranges = append(f.ranges, c)
	}
	return nil
}

// referrerTag is a tag that holds referrers of sha256:<hex>.
var referrerTag = regexp.MustCompile(`^sha256-[0-9a-f]{64}(?:\.(?:sig|att|sbom))?$`)

// apply returns the tags f selects, in the order given, except that with
// latest the N highest versions are kept in ascending order.
func (f *tagFilter) apply(tags []string) []string {
	var out []string
	for _, t := range tags {
		if f.only != nil && !f.only[t] || f.noReferrerTags && referrerTag.MatchString(t) {
			continue
		}
		ok := true
		for _, re := range f.regexes {
			if !re.MatchString(t) {
				ok = false
				break
			}
		}
		if ok && len(f.ranges) > 0 {
			v := tagVersion(t)
			for _, c := range f.ranges {
				if v == nil || !c.Check(v) {
					ok = false
					break
				}
			}
		}
		if ok {
			out = append(out, t)
		}
	}
	if f.latest > 0 {
		// The N highest versions: tags that are not versions sort first
		// (SortTagsSemver), so they are taken only when fewer than N
		// versions are left.
		out = slices.Clone(out)
		distribution.SortTagsSemver(out)
		if len(out) > f.latest {
			out = out[len(out)-f.latest:]
		}
	}
	return out
}

// tagVersion is t as a semver version, read by the parser the semver sort
// uses (semvertag: an optional v, one to three numeric parts,
// -prerelease, +build); nil when t is not a version. Missing parts are 0,
// so "3.20" is 3.20.0 to a range, as skopeo's semver.NewVersion reads it.
func tagVersion(t string) *semver.Version {
	v := semvertag.Parse(t)
	if v == nil {
		return nil
	}
	var meta string
	if i := strings.IndexByte(t, '+'); i >= 0 {
		meta = t[i+1:]
	}
	return semver.New(uint64(v.Nums[0]), uint64(v.Nums[1]), uint64(v.Nums[2]), v.Suffix, meta)
}

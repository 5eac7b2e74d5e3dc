package distribution

import "github.com/wharfproject/wharf/internal/semvertag"

// SortTagsSemver sorts tags semver-aware, ascending, so that the last line
// is the highest version (`wharf tags --sort semver NAME | tail -1`): see
// semvertag.Sort.
func SortTagsSemver(tags []string) { semvertag.Sort(tags) }

// semverKey is what the sync filter reads of a tag's version.
type semverKey struct {
	nums   [3]int64
	suffix string
}

// parseSemverTag returns nil when t is not a version (semvertag.Parse).
func parseSemverTag(t string) *semverKey {
	v := semvertag.Parse(t)
	if v == nil {
		return nil
	}
	return &semverKey{nums: v.Nums, suffix: v.Suffix}
}

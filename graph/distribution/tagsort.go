package distribution

import "github.com/wharfproject/wharf/internal/semvertag"

// SortTagsSemver sorts tags semver-aware, ascending, so that the last line
// is the highest version (`wharf tags --sort semver NAME | tail -1`): see
// semvertag.Sort.
func SortTagsSemver(tags []string) { semvertag.Sort(tags) }

// Package packages is the packages room: the installed packages of an
// image, read from its package databases and binaries through the layer
// index (graph/contents), and compared between two images.
package packages

import "github.com/wharfproject/wharf/api/types"

// Compare is the packages section of a diff: what b adds, removes,
// upgrades and downgrades against a, each type's versions ordered by its
// own rules (dpkg, apk, rpm, Go modules' semver).
func Compare(a, b []types.Package) *types.PackagesDiff {
	return &types.PackagesDiff{} // seam: the packages helper builds it
}

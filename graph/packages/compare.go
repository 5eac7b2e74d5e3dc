package packages

import (
	"sort"
	"strings"

	apkver "github.com/knqyf263/go-apk-version"
	debver "github.com/knqyf263/go-deb-version"
	rpmver "github.com/knqyf263/go-rpm-version"
	"golang.org/x/mod/semver"

	"github.com/wharfproject/wharf/api/types"
)

// Compare is the packages section of a diff: what b adds, removes,
// upgrades and downgrades against a, each type's versions ordered by its
// own rules (dpkg, apk, rpm, Go modules' semver). Packages are matched by
// (Type, Name, Arch); a name held at several versions on a side (one Go
// module in two binaries) is changed only where one version stands on
// each side, its other versions added or removed.
func Compare(a, b []types.Package) *types.PackagesDiff {
	type key struct{ typ, name, arch string }
	group := func(ps []types.Package) (map[key][]types.Package, []key) {
		m := map[key][]types.Package{}
		var order []key
		for _, p := range ps {
			k := key{p.Type, p.Name, p.Arch}
			if _, ok := m[k]; !ok {
				order = append(order, k)
			}
			if !hasVersion(m[k], p.Version) {
				m[k] = append(m[k], p)
			}
		}
		return m, order
	}
	am, aKeys := group(a)
	bm, bKeys := group(b)
	d := &types.PackagesDiff{}
	for _, k := range aKeys {
		olds, news := am[k], bm[k]
		onlyA, onlyB := versionsOnly(olds, news), versionsOnly(news, olds)
		if len(onlyA) == 1 && len(onlyB) == 1 {
			ch := types.PackageChange{Name: k.name, Type: k.typ, From: onlyA[0].Version, To: onlyB[0].Version}
			if CompareVersions(k.typ, ch.From, ch.To) <= 0 {
				d.Upgraded = append(d.Upgraded, ch)
			} else {
				d.Downgraded = append(d.Downgraded, ch)
			}
			continue
		}
		d.Removed = append(d.Removed, onlyA...)
		d.Added = append(d.Added, onlyB...)
	}
	for _, k := range bKeys {
		if _, ok := am[k]; !ok {
			d.Added = append(d.Added, bm[k]...)
		}
	}
	sortPackages(d.Added)
	sortPackages(d.Removed)
	for _, cs := range [][]types.PackageChange{d.Upgraded, d.Downgraded} {
		sort.Slice(cs, func(i, j int) bool {
			if cs[i].Type != cs[j].Type {
				return cs[i].Type < cs[j].Type
			}
			return cs[i].Name < cs[j].Name
		})
	}
	return d
}

func hasVersion(ps []types.Package, v string) bool {
	for _, p := range ps {
		if p.Version == v {
			return true
		}
	}
	return false
}

func versionsOnly(a, b []types.Package) []types.Package {
	var out []types.Package
	for _, p := range a {
		if !hasVersion(b, p.Version) {
			out = append(out, p)
		}
	}
	return out
}

func sortPackages(ps []types.Package) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Type != ps[j].Type {
			return ps[i].Type < ps[j].Type
		}
		if ps[i].Name != ps[j].Name {
			return ps[i].Name < ps[j].Name
		}
		return ps[i].Version < ps[j].Version
	})
}

// CompareVersions orders two versions of a package of type typ: -1, 0 or
// +1. A version its type's rules cannot read is ordered as a string.
func CompareVersions(typ, a, b string) int {
	if a == b {
		return 0
	}
	switch typ {
	case types.PackageTypeDeb:
		va, errA := debver.NewVersion(a)
		vb, errB := debver.NewVersion(b)
		if errA == nil && errB == nil {
			return sign(va.Compare(vb))
		}
	case types.PackageTypeApk:
		va, errA := apkver.NewVersion(a)
		vb, errB := apkver.NewVersion(b)
		if errA == nil && errB == nil {
			return sign(va.Compare(vb))
		}
	case types.PackageTypeRpm:
		va, vb := rpmver.NewVersion(a), rpmver.NewVersion(b)
		return sign(va.Compare(vb))
	case types.PackageTypeGoModule:
		ga, gb := goSemver(a), goSemver(b)
		if semver.IsValid(ga) && semver.IsValid(gb) {
			return semver.Compare(ga, gb)
		}
	}
	return strings.Compare(a, b)
}

// goSemver is a Go version as semver reads it: stdlib's "go1.22.1" as
// "v1.22.1".
func goSemver(v string) string {
	if strings.HasPrefix(v, "go") {
		return "v" + strings.TrimPrefix(v, "go")
	}
	return v
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

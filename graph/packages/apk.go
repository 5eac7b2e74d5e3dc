package packages

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
)

// ApkEntry is one record of apk's installed database, the fields the
// catalog uses.
type ApkEntry struct {
	Package, Version, Architecture, Origin, License string
}

// ParseApkInstalled reads apk's installed database: records of "X:value"
// lines separated by blank lines (P name, V version, A arch, o origin,
// L license). Lines of other shapes are skipped, as syft skips them.
func ParseApkInstalled(b []byte) []ApkEntry {
	var out []ApkEntry
	var cur ApkEntry
	started := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if started {
				out = append(out, cur)
			}
			cur, started = ApkEntry{}, false
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" || v == "" {
			continue
		}
		started = true
		switch k {
		case "P":
			cur.Package = v
		case "V":
			cur.Version = v
		case "A":
			cur.Architecture = v
		case "o":
			cur.Origin = v
		case "L":
			cur.License = v
		}
	}
	if started {
		out = append(out, cur)
	}
	return out
}

func catalogApk(ctx context.Context, fsys FS, lim Limits, f *files, rel *Release, c *collector) error {
	for _, p := range f.apk {
		b, err := readCapped(ctx, fsys, p, lim.MaxTextDB)
		if errors.Is(err, ErrTooLarge) || errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range ParseApkInstalled(b) {
			pk := types.Package{
				Name: e.Package, Version: e.Version, Type: types.PackageTypeApk,
				Arch: e.Architecture, Locations: []string{p},
			}
			if e.License != "" {
				pk.Licenses = []string{e.License}
			}
			if rel != nil {
				q := map[string]string{"arch": e.Architecture}
				if e.Origin != e.Package {
					q["upstream"] = e.Origin
				}
				pk.PURL = purl("apk", strings.ToLower(rel.ID), e.Package, e.Version, q, rel)
			}
			if err := c.add(pk); err != nil {
				return err
			}
		}
	}
	return nil
}

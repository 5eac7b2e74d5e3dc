package packages

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
)

// DpkgEntry is one paragraph of a dpkg status file, the fields the
// catalog uses.
type DpkgEntry struct {
	Package, Version, Architecture string
	Source, SourceVersion          string
	Status                         string
}

// sourceField is the Source field: "name" or "name (version)".
var sourceField = regexp.MustCompile(`(?P<name>\S+)( \((?P<version>.*)\))?`)

// ParseDpkgStatus reads the paragraphs of a dpkg status file (deb-control
// syntax). Paragraphs without a Package and those being removed
// ("deinstall") are left out, as dpkg -l and syft leave them out.
// A paragraph that repeats a field ends the reading there, as syft's
// does.
func ParseDpkgStatus(b []byte) []DpkgEntry {
	var out []DpkgEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	fields := map[string]string{}
	key := ""
	flush := func() {
		if len(fields) == 0 {
			return
		}
		e := DpkgEntry{
			Package: fields["Package"], Version: fields["Version"],
			Architecture: fields["Architecture"], Status: fields["Status"],
			Source: fields["Source"],
		}
		fields, key = map[string]string{}, ""
		if strings.Contains(e.Status, "deinstall") {
			return
		}
		if e.Source != "" {
			if name, version := splitSource(e.Source); name != "" {
				e.Source, e.SourceVersion = name, version
			}
		}
		if e.Package != "" {
			out = append(out, e)
		}
	}
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case line == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			if key == "" {
				return out // a continuation with no field: not a status file
			}
			fields[key] += "\n " + strings.TrimSpace(line)
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok || strings.TrimSpace(k) == "" {
				continue
			}
			key = strings.ReplaceAll(strings.TrimSpace(k), "-", "")
			if _, dup := fields[key]; dup {
				return out
			}
			fields[key] = strings.TrimSpace(v)
		}
	}
	flush()
	return out
}

func splitSource(s string) (name, version string) {
	if recipe, ok := strings.CutSuffix(s, ".bb"); ok && !strings.ContainsAny(recipe, " (") {
		name, version, _ = strings.Cut(recipe, "_")
		return name, version
	}
	m := sourceField.FindStringSubmatch(s)
	if m == nil {
		return "", ""
	}
	return m[1], m[3]
}

func catalogDpkg(ctx context.Context, fsys FS, lim Limits, f *files, rel *Release, c *collector) error {
	dbs := append(append([]string(nil), f.dpkg...), f.statusD...)
	if len(f.statusD) > lim.MaxStatusFiles {
		dbs = dbs[:len(f.dpkg)+lim.MaxStatusFiles]
	}
	for _, p := range dbs {
		b, err := readCapped(ctx, fsys, p, lim.MaxTextDB)
		if errors.Is(err, ErrTooLarge) || errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range ParseDpkgStatus(b) {
			if err := c.add(dpkgPackage(e, p, rel)); err != nil {
				return err
			}
		}
	}
	return nil
}

func dpkgPackage(e DpkgEntry, loc string, rel *Release) types.Package {
	p := types.Package{
		Name: e.Package, Version: e.Version, Type: types.PackageTypeDeb,
		Arch: e.Architecture, Locations: []string{loc},
	}
	if rel.debianLike() {
		q := map[string]string{"arch": e.Architecture}
		if e.Source != "" {
			q["upstream"] = e.Source
			if e.SourceVersion != "" {
				q["upstream"] = e.Source + "@" + e.SourceVersion
			}
		}
		p.PURL = purl("deb", rel.ID, e.Package, e.Version, q, rel)
	}
	return p
}

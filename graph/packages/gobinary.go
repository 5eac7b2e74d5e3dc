package packages

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/mod/module"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
)

// elfMagic starts every ELF file: executables that do not are not read
// past their first bytes.
var elfMagic = []byte("\x7fELF")

const devel = "(devel)"

// versionFlags find a main module's version in -ldflags' -X settings, as
// syft's knownBuildFlagPatterns do.
var versionFlags = []string{
	`(?m)\.[a-zA-Z0-9]*([rR]elease)?([gG]it)?([bB]uild)?[vV]er(sion)?=(\S+/)*(?P<version>v?\d+.\d+.\d+[-\w]*(?:\.[-\w]+)*)`,
	`(?m)\.[a-zA-Z0-9]*([tT]ag)=(\S+/)*(?P<version>v?\d+.\d+.\d+[-\w]*(?:\.[-\w]+)*)`,
}

// catalogGo reads the build info of each executable that is ELF: one
// package per module (a replacement's path and version, unless it is a
// local directory), the main module, and the toolchain as "stdlib".
func catalogGo(ctx context.Context, fsys FS, lim Limits, f *files, c *collector) error {
	var read int64
	for i, e := range f.exec {
		if i >= lim.MaxBinaries || read+e.Size > lim.MaxBinaryBytes {
			break
		}
		if e.Size > lim.MaxBinarySize {
			continue
		}
		info, n, err := readBuildInfo(ctx, fsys, lim, e.Path)
		read += n
		if errdefs.IsNotFound(err) || errors.Is(err, errNotGo) || errors.Is(err, ErrTooLarge) {
			continue
		}
		if err != nil {
			return err
		}
		for _, p := range goPackages(info, e.Path) {
			if err := c.add(p); err != nil {
				return err
			}
		}
	}
	return nil
}

var errNotGo = errors.New("not a Go binary")

func readBuildInfo(ctx context.Context, fsys FS, lim Limits, p string) (*debug.BuildInfo, int64, error) {
	tmp, err := os.CreateTemp(lim.TempDir, "wharf-gobin-*")
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}()
	w := &elfFile{capFile: capFile{f: tmp, max: lim.MaxBinarySize}}
	err = fsys.Copy(ctx, p, w)
	switch {
	case errors.Is(err, errNotELF), errors.Is(err, contents.ErrDeclined):
		// Declined: the layer's index pass read it whole and found no
		// ELF file with the build info's magic (Wanted.Keep).
		return nil, w.n, errNotGo
	case errors.Is(err, errCapped):
		return nil, w.n, fmt.Errorf("%s: larger than %d bytes: %w", p, lim.MaxBinarySize, ErrTooLarge)
	case err != nil:
		return nil, w.n, err
	}
	if w.n < int64(len(elfMagic)) {
		return nil, w.n, errNotGo
	}
	info, err := safeBuildInfo(tmp)
	if err != nil {
		return nil, w.n, errNotGo
	}
	return info, w.n, nil
}

// safeBuildInfo reads the build info of a binary an image's publisher
// wrote: a malformed one must fail the binary, never the daemon.
func safeBuildInfo(f *os.File) (info *debug.BuildInfo, err error) {
	defer func() {
		if r := recover(); r != nil {
			info, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return buildinfo.Read(f)
}

var errNotELF = errors.New("not ELF")

// elfFile spools an executable, failing at the first write that shows it
// is not ELF, so a script costs its first bytes only.
type elfFile struct {
	capFile
	head []byte
}

func (w *elfFile) Write(p []byte) (int, error) {
	if len(w.head) < len(elfMagic) {
		need := len(elfMagic) - len(w.head)
		w.head = append(w.head, p[:min(need, len(p))]...)
		if !bytes.HasPrefix(elfMagic, w.head) {
			return 0, errNotELF
		}
	}
	return w.capFile.Write(p)
}

// goPackages is syft's reading of one binary's build info.
func goPackages(info *debug.BuildInfo, loc string) []types.Package {
	deps := info.Deps
	main := info.Main
	if (main == debug.Module{} && info.Path != "") || main.Path == "command-line-arguments" {
		main, deps = mainFromDeps(info, deps)
	}
	var out []types.Package
	for _, d := range deps {
		if d == nil || moduleEqual(d, &main) {
			continue
		}
		out = append(out, goModule(d, loc))
	}
	if main != (debug.Module{}) {
		if main.Version == devel {
			main.Version = mainVersion(info, main.Path)
		}
		out = append(out, goModule(&main, loc))
	}
	if v, _, _ := strings.Cut(info.GoVersion, " "); stdlibVersion.MatchString(strings.TrimPrefix(v, "go")) {
		out = append(out, types.Package{
			Name: "stdlib", Version: v, Type: types.PackageTypeGoModule,
			PURL:      purl("golang", "", "stdlib", strings.TrimPrefix(v, "go"), nil, nil),
			Licenses:  []string{"BSD-3-Clause"},
			Locations: []string{loc},
		})
	}
	return out
}

// stdlibVersion is what syft needs of a toolchain version to name stdlib
// (its CPE needs a number).
var stdlibVersion = regexp.MustCompile(`\d+`)

// mainFromDeps is syft's main module of a binary built from files: the one
// dependency at (devel), else the path as (devel).
func mainFromDeps(info *debug.BuildInfo, deps []*debug.Module) (debug.Module, []*debug.Module) {
	idx, n := -1, 0
	for i, d := range deps {
		if d != nil && d.Version == devel {
			idx, n = i, n+1
		}
	}
	if n == 1 {
		m := *deps[idx]
		rest := append(append([]*debug.Module(nil), deps[:idx]...), deps[idx+1:]...)
		return m, rest
	}
	return debug.Module{Path: info.Path, Version: devel}, deps
}

func moduleEqual(a, b *debug.Module) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Path != b.Path || a.Version != b.Version || a.Sum != b.Sum {
		return false
	}
	return moduleEqual(a.Replace, b.Replace)
}

func goModule(d *debug.Module, loc string) types.Package {
	name := d.Path
	if r := d.Replace; r != nil {
		if !strings.HasPrefix(r.Path, ".") && !strings.HasPrefix(r.Path, "/") {
			name = r.Path
		}
		d = r
	}
	version := d.Version
	if version == devel {
		version = ""
	}
	ns, base := "", name
	if i := strings.LastIndex(name, "/"); i > 0 && i < len(name)-1 {
		ns, base = name[:i], name[i+1:]
	}
	return types.Package{
		Name: name, Version: version, Type: types.PackageTypeGoModule,
		PURL: purl("golang", ns, base, version, nil, nil), Locations: []string{loc},
	}
}

// mainVersion is the version of a main module built at (devel): from
// -ldflags' -X version settings, else a pseudo-version of the VCS
// revision, else none.
func mainVersion(info *debug.BuildInfo, mainPath string) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	major, full := versionFromLDFlags(settings["-ldflags"], mainPath)
	if full != "" {
		return full
	}
	rev, hasRev := settings["vcs.revision"]
	ts, hasTime := settings["vcs.time"]
	if hasRev && hasTime {
		t, _ := time.Parse(time.RFC3339, ts)
		if len(rev) >= 12 {
			rev = rev[:12]
		}
		v := module.PseudoVersion(major, full, t, rev)
		if !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		return v
	}
	return ""
}

func versionFromLDFlags(ldflags, mainPath string) (major, full string) {
	if ldflags == "" {
		return "", ""
	}
	for _, pat := range versionFlags {
		re, err := regexp.Compile(`(main|` + strings.ReplaceAll(regexp.QuoteMeta(mainPath), "/", `\/`) + `\/[^\s]*)` + pat)
		if err != nil {
			continue
		}
		v := firstNamed(re, ldflags, "version")
		if v == "" {
			continue
		}
		full = v
		if !strings.HasPrefix(v, "v") {
			full = "v" + v
		}
		major = strings.TrimPrefix(strings.Split(v, ".")[0], "v")
		return major, full
	}
	return "", ""
}

// firstNamed is the named group of the first match where it is not empty.
func firstNamed(re *regexp.Regexp, s, name string) string {
	i := re.SubexpIndex(name)
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		if i >= 0 && i < len(m) && m[i] != "" {
			return m[i]
		}
	}
	return ""
}

package packages

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
)

// Release is what os-release(5) says of the distro.
type Release struct {
	ID, VersionID, BuildID, Name, PrettyName string
	IDLike                                   []string
}

// osReleasePaths are read in order, the first found wins (os-release(5)).
var osReleasePaths = []string{"/etc/os-release", "/usr/lib/os-release"}

func readRelease(ctx context.Context, fsys FS, lim Limits) (*Release, error) {
	for _, p := range osReleasePaths {
		b, err := readCapped(ctx, fsys, p, lim.MaxOSRelease)
		if errdefs.IsNotFound(err) || errors.Is(err, ErrTooLarge) || errdefs.IsInvalidArgument(err) {
			continue // absent, a directory, or not an os-release
		}
		if err != nil {
			return nil, err
		}
		if r := ParseOSRelease(b); r != nil {
			return r, nil
		}
	}
	return nil, nil
}

// ParseOSRelease reads os-release(5)'s KEY=value lines (values quoted as
// shell words); nil when it names no ID, NAME or PRETTY_NAME.
func ParseOSRelease(b []byte) *Release {
	var r Release
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = unquote(strings.TrimSpace(v))
		switch strings.TrimSpace(k) {
		case "ID":
			r.ID = v
		case "VERSION_ID":
			r.VersionID = v
		case "BUILD_ID":
			r.BuildID = v
		case "NAME":
			r.Name = v
		case "PRETTY_NAME":
			r.PrettyName = v
		case "ID_LIKE":
			r.IDLike = strings.Fields(v)
		}
	}
	if r.ID == "" && r.Name == "" && r.PrettyName == "" {
		return nil
	}
	return &r
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		if v[0] == '"' {
			if s, err := strconv.Unquote(v); err == nil {
				return s
			}
		}
		return v[1 : len(v)-1]
	}
	return v
}

// debianLike reports whether the distro is Debian or derives from it.
func (r *Release) debianLike() bool {
	if r == nil {
		return false
	}
	if r.ID == "debian" {
		return true
	}
	for _, id := range r.IDLike {
		if id == "debian" {
			return true
		}
	}
	return false
}

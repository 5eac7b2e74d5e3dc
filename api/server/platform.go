package server

import (
	"encoding/json"
	"net/http"
	"regexp"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/imagespec"
)

// Platforms arrive in two forms: the os[/arch[/variant]] string of POST
// /images/create, and the JSON OCI platform of inspect, history (and, as
// the API grows, push, save, load and delete). Both are checked here, the
// one place api/server reads a platform, so that a value like `../../etc`
// is a 400 whichever route it comes through: a platform names an OS and a
// CPU, never a path, and it ends up in file names, logs and errors.
//
// The rules are containerd's platforms.Parse, a little stricter: an OS is
// letters, digits, '_' and '-'; an architecture or variant may also hold
// dots (containerd allows them) but may not start with one, which refuses
// ".", ".." and hidden names; os.version and os.features use the same
// characters.
var (
	platformOS   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	platformPart = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]*$`)
)

// decodePlatformJSON parses the JSON OCI platform of inspect, history, push
// and save (`{"os":"linux","architecture":"arm64"}`).
func decodePlatformJSON(s string) (*ocispec.Platform, error) {
	var p ocispec.Platform
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return nil, invalidArg("failed to parse platform: %v", err)
	}
	if p.OS == "" && p.Architecture == "" {
		return nil, invalidArg("failed to parse platform: os and architecture are empty")
	}
	type field struct {
		name, value string
		re          *regexp.Regexp
	}
	fields := []field{
		{"os", p.OS, platformOS},
		{"architecture", p.Architecture, platformPart},
		{"variant", p.Variant, platformPart},
		{"os.version", p.OSVersion, platformPart},
	}
	for _, f := range p.OSFeatures {
		fields = append(fields, field{"os.features", f, platformPart})
	}
	for _, f := range fields {
		if f.value != "" && !f.re.MatchString(f.value) {
			return nil, invalidArg("invalid platform %s: %s %q", s, f.name, f.value)
		}
	}
	return &p, nil
}

// parsePlatformString parses the os[/arch[/variant]] string of
// POST /images/create with wharf's one platform parser
// (imagespec.ParsePlatform, containerd's platforms.Parse: normalised, path-like
// junk refused).
func parsePlatformString(s string) (*ocispec.Platform, error) {
	p, err := imagespec.ParsePlatform(s)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// platformParam is the JSON "platform" parameter of a route that accepts it
// from API version since on (nil when absent or older).
// platformsParam reads the JSON platform values of a save or load at API ≥
// since. moby reads several from 1.52 on (api/docs/CHANGELOG.md) and only
// the first before; wharfd reads every one at any version from since on: a
// client at an older version sends one (the docker CLI 28 does), and the
// wharf CLI, at 1.50, sends several for `save --platform A --platform B`.
func platformsParam(r *http.Request, since string) ([]ocispec.Platform, error) {
	vs := r.Form["platform"]
	if len(vs) == 0 || !versionAtLeast(apiVersionFrom(r.Context()), since) {
		return nil, nil
	}
	var out []ocispec.Platform
	for _, s := range vs {
		if s == "" {
			continue
		}
		p, err := decodePlatformJSON(s)
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, nil
}

func platformParam(r *http.Request, since string) (*ocispec.Platform, error) {
	v := r.Form.Get("platform")
	if v == "" || !versionAtLeast(apiVersionFrom(r.Context()), since) {
		return nil, nil
	}
	return decodePlatformJSON(v)
}

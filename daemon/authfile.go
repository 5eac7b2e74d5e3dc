package daemon

import (
	"context"

	registrytypes "github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/internal/dockerconfig"
	"github.com/wharfproject/wharf/registry"
)

// The watch's credentials: check-remote-auth-file, a docker-style
// config.json read by internal/dockerconfig at start and on each SIGHUP,
// and used by the watch's rounds only. API requests keep using the
// credentials their client sends; they never borrow these (a client that
// sent none is anonymous).
//
// Which host gets which set is not decided here: the sets go, keyed as the
// file keys them, into RemoteCheckOptions.Auth, and the registry layer's
// per-registry binding (registry.Credentials.For) gives each set to the
// registry its key names and nothing else, the same path as a client's
// X-Registry-Config.

// ErrAuthFile classifies the errors of reading the auth file.
var ErrAuthFile = dockerconfig.ErrFile

// authFile is the parsed auth file (nil: none). Its String never shows a
// secret.
type authFile struct {
	f *dockerconfig.File
	// warning is loadAuthFile's, as read ("" none).
	warning string
}

// parseAuthFile parses a config.json. Its errors name keys and fields,
// never values.
func parseAuthFile(b []byte) (*authFile, error) {
	f, err := dockerconfig.Parse(b)
	if err != nil {
		return nil, err
	}
	return &authFile{f: f}, nil
}

// loadAuthFile reads and parses the auth file at path; warning is set for
// a file others can read.
func loadAuthFile(path string) (*authFile, string, error) {
	f, warning, err := dockerconfig.Load(path)
	if err != nil {
		return nil, "", err
	}
	return &authFile{f: f, warning: warning}, warning, nil
}

// same reports whether f and g were read from the same bytes (both nil:
// the same "none").
func (f *authFile) same(g *authFile) bool {
	if f == nil || g == nil {
		return f == g
	}
	return f.f.Same(g.f)
}

// String names the counts, never the credentials.
func (f *authFile) String() string {
	if f == nil {
		return "none"
	}
	return f.f.String()
}

// roundAuth is what a round presents: the sets by the file's keys, and
// the keys whose helper failed (their registries are skipped for the
// round: docs/security.md, "a failing credential helper is an error, not
// a silent anonymous request").
type roundAuth struct {
	sets   map[string]registrytypes.AuthConfig
	failed map[string]registrytypes.AuthConfig // key → a placeholder bound to it
}

// skips reports whether reg (a reference domain) is a registry whose
// helper failed, matched as the sets are (registry.Credentials.For).
func (a roundAuth) skips(reg string) bool {
	return len(a.failed) != 0 && (registry.Credentials{Registries: a.failed}).For(reg) != nil
}

// credentials are the sets for a round, the helpers asked now; a helper
// that fails is one error of errs and its registry is skipped.
func (f *authFile) credentials(ctx context.Context) (roundAuth, []error) {
	if f == nil {
		return roundAuth{}, nil
	}
	sets, failedKeys, errs := f.f.Credentials(ctx)
	var failed map[string]registrytypes.AuthConfig
	for _, k := range failedKeys {
		if failed == nil {
			failed = map[string]registrytypes.AuthConfig{}
		}
		failed[k] = registrytypes.AuthConfig{Username: "-", ServerAddress: k}
	}
	return roundAuth{sets: sets, failed: failed}, errs
}

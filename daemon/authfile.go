package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	registrytypes "github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/registry"
)

// The watch's credentials (check-remote-auth-file, issue 24): a docker-style
// config.json — the file `docker login` writes — read at start and on each
// SIGHUP, and used by the watch's rounds only. API requests keep using the
// credentials their client sends; they never borrow these (a client that
// sent none is anonymous, as before).
//
//	{
//	  "auths": {
//	    "registry.example.com": {"auth": "base64(user:password)"},
//	    "other.example.com":    {"username": "u", "password": "p"},
//	    "sso.example.com":      {"identitytoken": "…"},   // OAuth2 refresh grant
//	    "tok.example.com":      {"registrytoken": "…"},   // sent as the bearer token
//	    "store.example.com":    {}                        // ask credsStore
//	  },
//	  "credHelpers": {"123.dkr.ecr.eu-west-1.amazonaws.com": "ecr-login"},
//	  "credsStore": "pass"
//	}
//
// Which host gets which set is NOT decided here: the sets go, keyed as the
// file keys them, into RemoteCheckOptions.Auth, and the registry layer's
// per-registry binding (registry/credentials.go: pick, For, sendOnlyTo)
// gives each set to the registry its key names and nothing else — the same
// path as a client's X-Registry-Config.
//
// The parser is ours (about 60 lines) rather than docker/cli's configfile:
// that package is in go.sum only as an indirect dependency and brings the
// CLI's config tree with it, and oras-go's credentials store (which the
// CLI uses) hides the list of hosts the file names, which the watch needs
// to know whom to ask a helper for.

// maxAuthFile caps the auth file (1 MiB, as daemon.json): a config.json
// with a few dozen registries is a few KiB.
const maxAuthFile = 1 << 20

// Credential helpers (the docker-credential-helpers protocol): the daemon
// runs `docker-credential-NAME get` with the server address on stdin and
// reads {"ServerURL","Username","Secret"} from stdout.
const (
	// helperTimeout bounds one helper run (10 s): a keychain helper
	// answers in milliseconds and a cloud one (ecr-login, gcr) makes one
	// HTTPS call of a second or two; a helper that hangs (a locked
	// keychain waiting for a prompt no one sees) must not hold a round
	// for ever. The helper is killed at the deadline.
	helperTimeout = 10 * time.Second
	// helperWaitDelay is how long the pipes are kept open after the kill
	// for a child the helper started that still holds them.
	helperWaitDelay = time.Second
	// maxHelperOutput caps what is read of a helper's stdout (64 KiB): the
	// answer is one small JSON object; the largest tokens in use (Azure AD
	// access tokens) are under 10 KiB.
	maxHelperOutput = 64 << 10
	// helperNotFound is the protocol's answer for a host the helper holds
	// nothing for (docker-credential-helpers credentials.errCredentialsNotFoundMessage):
	// the protocol's own sentinel, on stdout with exit status 1.
	helperNotFound = "credentials not found in native keychain"
	// helperTokenUser is the username a helper gives for an identity token
	// (docker-credential-helpers, docker/cli's convention).
	helperTokenUser = "<token>"
)

// ErrAuthFile classifies the errors of reading the auth file.
var ErrAuthFile = errors.New("unusable auth file")

// errHelper classifies a helper's failures (run, exit, answer).
var errHelper = errors.New("credential helper failed")

// authFile is the parsed auth file. Its String never shows a secret.
type authFile struct {
	// inline are the sets written in the file, keyed as the file keys
	// them (a host, host:port or URL).
	inline map[string]registrytypes.AuthConfig
	// helpers are the hosts a helper answers for: credHelpers, and, with
	// credsStore, every key of auths without an inline set (what `docker
	// login` writes when a store holds the secret).
	helpers map[string]string
	// sum is the SHA-256 of the file, to tell a reload whether it changed;
	// never shown (a hash of a short password can be guessed back).
	sum [sha256.Size]byte
	// warning is authFileWarning's, as read ("" none).
	warning string
}

// same reports whether f and g were read from the same bytes (both nil:
// the same "none").
func (f *authFile) same(g *authFile) bool {
	if f == nil || g == nil {
		return f == g
	}
	return f.sum == g.sum
}

// String names the hosts, never the credentials (a %v in a log is safe).
func (f *authFile) String() string {
	if f == nil {
		return "none"
	}
	return fmt.Sprintf("%d registries, %d through credential helpers", len(f.inline), len(f.helpers))
}

// dockerConfig is the part of config.json the watch reads; other keys
// (psFormat, proxies, …) are ignored, as docker ignores what it does not know.
type dockerConfig struct {
	Auths       map[string]dockerAuth `json:"auths"`
	CredHelpers map[string]string     `json:"credHelpers"`
	CredsStore  string                `json:"credsStore"`
}

type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// parseAuthFile parses a config.json. Its errors name keys and fields,
// never values.
func parseAuthFile(b []byte) (*authFile, error) {
	var c dockerConfig
	if err := json.Unmarshal(b, &c); err != nil {
		// A *json.SyntaxError or *json.UnmarshalTypeError says where and
		// what type, not the value; keep only the offset to be sure.
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%w: invalid JSON at byte %d", ErrAuthFile, se.Offset)
		}
		return nil, fmt.Errorf("%w: not a docker config.json (auths, credHelpers, credsStore)", ErrAuthFile)
	}
	f := &authFile{inline: map[string]registrytypes.AuthConfig{}, helpers: map[string]string{}}
	for key, a := range c.Auths {
		if strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("%w: auths: an empty registry key", ErrAuthFile)
		}
		ac := registrytypes.AuthConfig{
			Username: a.Username, Password: a.Password,
			IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
			ServerAddress: key,
		}
		if a.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(a.Auth))
			if err != nil {
				return nil, fmt.Errorf("%w: auths[%q].auth is not base64", ErrAuthFile, key)
			}
			user, pass, ok := strings.Cut(string(dec), ":")
			if !ok || user == "" {
				return nil, fmt.Errorf("%w: auths[%q].auth is not base64 of user:password", ErrAuthFile, key)
			}
			ac.Username, ac.Password = user, pass
		}
		if ac == (registrytypes.AuthConfig{ServerAddress: key}) {
			if c.CredsStore != "" {
				f.helpers[key] = c.CredsStore
			}
			continue
		}
		f.inline[key] = ac
	}
	for key, name := range c.CredHelpers {
		if strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("%w: credHelpers: an empty registry key", ErrAuthFile)
		}
		f.helpers[key] = name
		delete(f.inline, key) // docker: credHelpers win over auths
	}
	for key, name := range f.helpers {
		if name == "" || strings.ContainsAny(name, `/\`) || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' }) {
			return nil, fmt.Errorf("%w: credential helper %q for %q: a helper is named by the suffix of docker-credential-NAME, found in PATH", ErrAuthFile, name, key)
		}
	}
	return f, nil
}

// authFileWarning is the warning for a file that group or others can
// read ("" none): docker keeps its own config.json 0600.
func authFileWarning(path string, mode os.FileMode) string {
	if mode.Perm()&0o044 == 0 {
		return ""
	}
	return fmt.Sprintf("check-remote-auth-file %s is readable by group or others (mode %#o); it holds registry credentials: chmod 600 it", path, mode.Perm())
}

// loadAuthFile reads and parses the auth file at path; warning is set for
// a file others can read.
func loadAuthFile(path string) (f *authFile, warning string, err error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrAuthFile, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrAuthFile, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("%w: %s is not a regular file", ErrAuthFile, path)
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxAuthFile+1))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %w", ErrAuthFile, path, err)
	}
	if len(b) > maxAuthFile {
		return nil, "", fmt.Errorf("%w: %s is larger than %d bytes", ErrAuthFile, path, maxAuthFile)
	}
	f, err = parseAuthFile(b)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	f.sum = sha256.Sum256(b)
	f.warning = authFileWarning(path, fi.Mode())
	return f, f.warning, nil
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

// credentials are the sets for a round: the inline ones, and the helpers'
// answers, asked now (a helper's token may have been renewed since the
// last round: ecr-login's last 12 hours). A host a helper holds nothing
// for is left out (asked anonymously); a helper that fails puts its host
// in failed and is one error of errs (which names host and helper, never
// output).
func (f *authFile) credentials(ctx context.Context) (roundAuth, []error) {
	if f == nil {
		return roundAuth{}, nil
	}
	out := make(map[string]registrytypes.AuthConfig, len(f.inline)+len(f.helpers))
	for k, v := range f.inline {
		out[k] = v
	}
	keys := make([]string, 0, len(f.helpers))
	for k := range f.helpers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var (
		errs   []error
		failed map[string]registrytypes.AuthConfig
	)
	for _, k := range keys {
		ac, found, err := helperGet(ctx, f.helpers[k], k)
		switch {
		case err != nil:
			errs = append(errs, err)
			if failed == nil {
				failed = map[string]registrytypes.AuthConfig{}
			}
			failed[k] = registrytypes.AuthConfig{Username: "-", ServerAddress: k}
		case found:
			out[k] = ac
		}
	}
	return roundAuth{sets: out, failed: failed}, errs
}

// cappedBuffer keeps the first max bytes written and drains the rest, so
// that a helper that writes too much is not blocked on a full pipe (it is
// refused once it exits, or killed at the timeout).
type cappedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// helperGet runs `docker-credential-NAME get` for serverURL: the set, or
// found false when the helper holds nothing for it.
func helperGet(ctx context.Context, name, serverURL string) (registrytypes.AuthConfig, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	prog := "docker-credential-" + name
	fail := func(why string) error {
		return fmt.Errorf("%w: %s for %s: %s", errHelper, prog, serverURL, why)
	}
	cmd := exec.CommandContext(ctx, prog, "get")
	cmd.Stdin = strings.NewReader(serverURL)
	out := &cappedBuffer{max: maxHelperOutput}
	cmd.Stdout = out
	cmd.Stderr = nil // not read: it is not part of the protocol, and may say anything
	cmd.WaitDelay = helperWaitDelay
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return registrytypes.AuthConfig{}, false, fail(fmt.Sprintf("no answer in time (limit %s)", helperTimeout))
	case out.over:
		return registrytypes.AuthConfig{}, false, fail(fmt.Sprintf("answer larger than %d bytes", maxHelperOutput))
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if strings.TrimSpace(out.buf.String()) == helperNotFound {
				return registrytypes.AuthConfig{}, false, nil
			}
			// The output is not quoted: a helper's error may hold anything.
			return registrytypes.AuthConfig{}, false, fail(fmt.Sprintf("exit status %d", ee.ExitCode()))
		}
		return registrytypes.AuthConfig{}, false, fail(err.Error()) // not found in PATH, not executable
	}
	var ans struct {
		ServerURL string
		Username  string
		Secret    string
	}
	if json.Unmarshal(out.buf.Bytes(), &ans) != nil {
		return registrytypes.AuthConfig{}, false, fail("answer is not the protocol's JSON")
	}
	if ans.Secret == "" {
		return registrytypes.AuthConfig{}, false, nil
	}
	ac := registrytypes.AuthConfig{ServerAddress: serverURL}
	if ans.Username == helperTokenUser {
		ac.IdentityToken = ans.Secret
	} else {
		ac.Username, ac.Password = ans.Username, ans.Secret
	}
	return ac, true, nil
}

// Package dockerconfig reads Docker's config.json and runs its credential
// helpers: the one reader of registry credentials for the CLI (login,
// logout and the sets a command sends) and for the daemon's update watch
// (check-remote-auth-file).
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
// Two policies share the decoding: the CLI's Config looks one registry up
// at a time, as docker does (credHelpers, then credsStore, then auths),
// and writes it back; the watch's File is parsed whole and strictly at
// start, because the daemon must know every host the file names to ask a
// helper for it. Which registry receives which set is not decided here:
// that is the registry layer's per-registry binding.
//
// The parser is ours rather than docker/cli's configfile, which brings the
// CLI's config tree with it, or oras-go's store, which hides the list of
// hosts and runs helpers with no time or size bound.
package dockerconfig

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	registrytypes "github.com/moby/moby/api/types/registry"
)

// ErrFile classifies the errors of reading a config.json. Its messages
// name keys and fields, never values.
var ErrFile = errors.New("unusable auth file")

// ErrBadCredential classifies a credential the file cannot hold (a colon
// in a username, which base64(user:password) cannot carry).
var ErrBadCredential = errors.New("bad credential format")

// Path is $DOCKER_CONFIG/config.json, or ~/.docker/config.json; getenv
// reads the environment (the CLI's, faked in tests).
func Path(getenv func(string) string) (string, error) {
	if dir := getenv("DOCKER_CONFIG"); dir != "" {
		return filepath.Join(dir, "config.json"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the docker config: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".docker", "config.json"), nil
}

// fields is the part of config.json that holds credentials; other keys
// (psFormat, proxies, …) are ignored on reading and kept on writing, as
// docker does.
type fields struct {
	Auths       map[string]entry  `json:"auths"`
	CredHelpers map[string]string `json:"credHelpers"`
	CredsStore  string            `json:"credsStore"`
}

// entry is one set of auths, as the file writes it.
type entry struct {
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
}

// decode reads the credential fields of b.
func decode(b []byte) (fields, error) {
	var c fields
	if err := json.Unmarshal(b, &c); err != nil {
		// A *json.SyntaxError or *json.UnmarshalTypeError says where and
		// what type, not the value; keep only the offset to be sure.
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fields{}, fmt.Errorf("%w: invalid JSON at byte %d", ErrFile, se.Offset)
		}
		return fields{}, fmt.Errorf("%w: not a docker config.json (auths, credHelpers, credsStore)", ErrFile)
	}
	return c, nil
}

// authConfig is e as the set of registry key: "auth" wins over username
// and password. An empty set (ServerAddress only) means "ask credsStore".
func (e entry) authConfig(key string) (registrytypes.AuthConfig, error) {
	ac := registrytypes.AuthConfig{
		Username: e.Username, Password: e.Password,
		IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken,
		ServerAddress: key,
	}
	if e.Auth != "" {
		dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(e.Auth))
		if err != nil {
			return ac, fmt.Errorf("%w: auths[%q].auth is not base64", ErrFile, key)
		}
		user, pass, ok := strings.Cut(string(dec), ":")
		if !ok || user == "" {
			return ac, fmt.Errorf("%w: auths[%q].auth is not base64 of user:password", ErrFile, key)
		}
		ac.Username, ac.Password = user, pass
	}
	return ac, nil
}

// empty reports whether ac carries no credential.
func empty(ac registrytypes.AuthConfig) bool {
	return ac == registrytypes.AuthConfig{ServerAddress: ac.ServerAddress}
}

// newEntry is the file's form of ac (what docker login writes).
func newEntry(ac registrytypes.AuthConfig) entry {
	e := entry{IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken}
	if ac.Username != "" || ac.Password != "" {
		e.Auth = base64.StdEncoding.EncodeToString([]byte(ac.Username + ":" + ac.Password))
	}
	return e
}

// hostname is a key of auths without scheme or path ("https://r/v1/" →
// "r"), for the keys older docker versions wrote.
func hostname(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "http://"), "https://")
	key, _, _ = strings.Cut(key, "/")
	return key
}

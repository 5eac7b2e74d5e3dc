package dockerconfig

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strings"

	registrytypes "github.com/moby/moby/api/types/registry"
)

// File is a config.json parsed whole: the daemon's watch view, read at
// start and on each SIGHUP. Its String never shows a secret.
type File struct {
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
}

// Parse parses a config.json strictly: any unusable entry refuses the
// whole file, which the daemon reports at start rather than round after
// round.
func Parse(b []byte) (*File, error) {
	c, err := decode(b)
	if err != nil {
		return nil, err
	}
	f := &File{inline: map[string]registrytypes.AuthConfig{}, helpers: map[string]string{}}
	for key, e := range c.Auths {
		if strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("%w: auths: an empty registry key", ErrFile)
		}
		ac, err := e.authConfig(key)
		if err != nil {
			return nil, err
		}
		if empty(ac) {
			if c.CredsStore != "" {
				f.helpers[key] = c.CredsStore
			}
			continue
		}
		f.inline[key] = ac
	}
	for key, name := range c.CredHelpers {
		if strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("%w: credHelpers: an empty registry key", ErrFile)
		}
		f.helpers[key] = name
		delete(f.inline, key) // docker: credHelpers win over auths
	}
	for key, name := range f.helpers {
		if err := validHelper(name); err != nil {
			return nil, fmt.Errorf("%w: credential helper %q for %q: %w", ErrFile, name, key, err)
		}
	}
	return f, nil
}

// Load reads and parses the file at path (a regular file of at most
// 1 MiB); warning is set for a file others can read.
func Load(path string) (f *File, warning string, err error) {
	b, mode, err := readFile(path)
	if err != nil {
		return nil, "", err
	}
	f, err = Parse(b)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	f.sum = sha256.Sum256(b)
	return f, Warning(path, mode), nil
}

// Warning is the warning for a file that group or others can read (""
// none): docker keeps its own config.json 0600.
func Warning(path string, mode os.FileMode) string {
	if mode.Perm()&0o044 == 0 {
		return ""
	}
	return fmt.Sprintf("check-remote-auth-file %s is readable by group or others (mode %#o); it holds registry credentials: chmod 600 it", path, mode.Perm())
}

// Same reports whether f and g were read from the same bytes (both nil:
// the same "none").
func (f *File) Same(g *File) bool {
	if f == nil || g == nil {
		return f == g
	}
	return f.sum == g.sum
}

// String names the counts, never the credentials (a %v in a log is safe).
func (f *File) String() string {
	if f == nil {
		return "none"
	}
	return fmt.Sprintf("%d registries, %d through credential helpers", len(f.inline), len(f.helpers))
}

// Credentials are the sets of the file: the inline ones, and the helpers'
// answers, asked now (a helper's token may have been renewed since the
// last call: ecr-login's last 12 hours). A host a helper holds nothing
// for is left out; a helper that fails puts its key in failed and is one
// error of errs (which names host and helper, never output).
func (f *File) Credentials(ctx context.Context) (sets map[string]registrytypes.AuthConfig, failed []string, errs []error) {
	if f == nil {
		return nil, nil, nil
	}
	sets = make(map[string]registrytypes.AuthConfig, len(f.inline)+len(f.helpers))
	for k, v := range f.inline {
		sets[k] = v
	}
	keys := make([]string, 0, len(f.helpers))
	for k := range f.helpers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ac, found, err := HelperGet(ctx, f.helpers[k], k)
		switch {
		case err != nil:
			errs = append(errs, err)
			failed = append(failed, k)
		case found:
			sets[k] = ac
		}
	}
	return sets, failed, errs
}

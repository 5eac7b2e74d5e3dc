package dockerconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	registrytypes "github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/internal/atomicfile"
)

// Config is a config.json opened for one registry at a time: the CLI's
// view. A missing or empty file is an empty config.
type Config struct {
	path string
	// content is the whole file, so that a write keeps the keys it does
	// not know.
	content map[string]json.RawMessage
	fields  fields
	// auths are the file's auths as written, so that a write keeps the
	// fields of other entries it does not know (email, …).
	auths map[string]json.RawMessage
}

// Open reads the config.json at path.
func Open(path string) (*Config, error) {
	c := &Config{path: path, content: map[string]json.RawMessage{}}
	b, err := readCapped(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil
	case err != nil:
		return nil, err
	case len(strings.TrimSpace(string(b))) == 0:
		return c, nil
	}
	if err := json.Unmarshal(b, &c.content); err != nil {
		return nil, decodeError(err)
	}
	if c.fields, err = decode(b); err != nil {
		return nil, err
	}
	if raw, ok := c.content["auths"]; ok && json.Unmarshal(raw, &c.auths) != nil {
		return nil, fmt.Errorf("%w: not a docker config.json (auths, credHelpers, credsStore)", ErrFile)
	}
	return c, nil
}

// decodeError classifies a JSON error as decode does.
func decodeError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: invalid JSON at byte %d", ErrFile, se.Offset)
	}
	return fmt.Errorf("%w: not a JSON object", ErrFile)
}

// helper is the credential helper that holds key's set ("" none):
// credHelpers, then credsStore, as docker.
func (c *Config) helper(key string) string {
	if h := c.fields.CredHelpers[key]; h != "" {
		return h
	}
	return c.fields.CredsStore
}

// Get is the set stored for key (a registry host, or Docker Hub's
// https://index.docker.io/v1/), or found false. A failing helper is an
// error: sending no credentials would hide it as "unauthorized".
func (c *Config) Get(ctx context.Context, key string) (ac registrytypes.AuthConfig, found bool, err error) {
	if h := c.helper(key); h != "" {
		return HelperGet(ctx, h, key)
	}
	e, ok := c.fields.Auths[key]
	if !ok {
		for k, v := range c.fields.Auths {
			if hostname(k) == key {
				e, ok = v, true
				break
			}
		}
	}
	if !ok {
		return registrytypes.AuthConfig{}, false, nil
	}
	ac, err = e.authConfig(key)
	if err != nil {
		return registrytypes.AuthConfig{}, false, fmt.Errorf("%s: %w", c.path, err)
	}
	if empty(ac) {
		return registrytypes.AuthConfig{}, false, nil
	}
	return ac, true, nil
}

// Put stores ac for key: in its helper, or in the file's auths when
// there is none (as docker login).
func (c *Config) Put(ctx context.Context, key string, ac registrytypes.AuthConfig) error {
	if h := c.helper(key); h != "" {
		return helperStore(ctx, h, key, ac)
	}
	if strings.ContainsRune(ac.Username, ':') {
		return fmt.Errorf("%w: colons(:) are not allowed in username", ErrBadCredential)
	}
	e, err := json.Marshal(newEntry(ac))
	if err != nil {
		return fmt.Errorf("encoding credentials: %w", err)
	}
	if c.fields.Auths == nil {
		c.fields.Auths = map[string]entry{}
	}
	if c.auths == nil {
		c.auths = map[string]json.RawMessage{}
	}
	c.fields.Auths[key] = newEntry(ac)
	c.auths[key] = e
	return c.save()
}

// Delete removes key's set from its helper, or from the file's auths.
func (c *Config) Delete(ctx context.Context, key string) error {
	if h := c.helper(key); h != "" {
		return helperErase(ctx, h, key)
	}
	if _, ok := c.fields.Auths[key]; !ok {
		return nil
	}
	delete(c.fields.Auths, key)
	delete(c.auths, key)
	return c.save()
}

// save writes the file back, auths replaced and every other key kept,
// mode 0600 in a 0700 directory: it holds secrets.
func (c *Config) save() error {
	auths, err := json.Marshal(c.auths)
	if err != nil {
		return fmt.Errorf("encoding credentials: %w", err)
	}
	c.content["auths"] = auths
	b, err := json.MarshalIndent(c.content, "", "\t")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", c.path, err)
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return fmt.Errorf("saving %s: %w", c.path, err)
	}
	if err := atomicfile.WriteFile(c.path, b, 0o600); err != nil {
		return fmt.Errorf("saving %s: %w", c.path, err)
	}
	return nil
}

// maxFile caps a config.json (1 MiB, as daemon.json): one with a few
// dozen registries is a few KiB.
const maxFile = 1 << 20

// readCapped reads the regular file at path, up to maxFile bytes.
func readCapped(path string) ([]byte, error) {
	b, _, err := readFile(path)
	return b, err
}

// readFile reads the regular file at path, up to maxFile bytes, and its
// mode. Its errors wrap ErrFile and the os error.
func readFile(path string) ([]byte, os.FileMode, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrFile, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrFile, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%w: %s is not a regular file", ErrFile, path)
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxFile+1))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %w", ErrFile, path, err)
	}
	if len(b) > maxFile {
		return nil, 0, fmt.Errorf("%w: %s is larger than %d bytes", ErrFile, path, maxFile)
	}
	return b, fi.Mode(), nil
}

// Package syncyaml reads the sources of `wharf sync FILE.yaml`: skopeo
// sync's YAML, taken as is.
//
//	registry.example.com:
//	  images:               # repository: [tags]; [] is every tag
//	    busybox: []
//	    redis: ["1.0", "2.0"]
//	  images-by-tag-regex:  # repository: regex over its tags
//	    nginx: ^1\.13\.[12]-alpine-perl$
//	  images-by-semver:     # repository: Masterminds range
//	    alpine: ">= 3.12.0"
//	  tls-verify: false
//	  credentials: {username: …, password: …}   # IGNORED
//	  cert-dir: /etc/certs                       # IGNORED
//
// Credentials in the file are never read: each registry gets the user's
// stored ones (`wharf login`, the credential helpers), as copy does, and
// only that registry. tls-verify and cert-dir belong to the daemon's
// registry configuration (insecure-registries, hosts.toml): the file
// cannot loosen them.
package syncyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"go.yaml.in/yaml/v3"

	"github.com/wharfproject/wharf/client"
)

// MaxSize caps the file: skopeo's examples are a few hundred bytes;
// 1 MiB is thousands of repositories.
const MaxSize = 1 << 20

// registryEntry is one registry's entry.
type registryEntry struct {
	Images           map[string][]string `yaml:"images"`
	ImagesByTagRegex map[string]string   `yaml:"images-by-tag-regex"`
	ImagesBySemver   map[string]string   `yaml:"images-by-semver"`
	TLSVerify        *bool               `yaml:"tls-verify"`
	CertDir          string              `yaml:"cert-dir"`
	Credentials      yaml.Node           `yaml:"credentials"`
}

// Parse turns skopeo sync's YAML into sync sources, sorted by
// registry and repository, with the warnings the user must see (what the
// file says that wharf does not take from it).
func Parse(b []byte) (sources []client.SyncSource, warnings []string, err error) {
	if len(b) > MaxSize {
		return nil, nil, fmt.Errorf("the YAML is %d bytes, more than %d", len(b), MaxSize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var regs map[string]registryEntry
	if err := dec.Decode(&regs); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("parse the YAML: %v", err)
	}
	if len(regs) == 0 {
		return nil, nil, errors.New("the YAML names no registry")
	}
	for _, host := range slices.Sorted(maps.Keys(regs)) {
		r := regs[host]
		if host == "" || strings.ContainsAny(host, "/@ \t") {
			return nil, nil, fmt.Errorf("%q is not a registry host", host)
		}
		if !r.Credentials.IsZero() {
			warnings = append(warnings, fmt.Sprintf("%s: credentials in the YAML are ignored: wharf uses the stored credentials of each registry (wharf login)", host))
		}
		if r.TLSVerify != nil && !*r.TLSVerify {
			warnings = append(warnings, fmt.Sprintf("%s: tls-verify: false is not taken from the YAML: the daemon's registry configuration (insecure-registries, hosts.toml) says how to reach it", host))
		}
		if r.CertDir != "" {
			warnings = append(warnings, fmt.Sprintf("%s: cert-dir is ignored: certificates are the daemon's (certs.d)", host))
		}
		add := func(repo string, s client.SyncSource) error {
			name := host + "/" + repo
			n, err := reference.ParseNormalizedNamed(name)
			if err != nil {
				return fmt.Errorf("%s: repository %q: %v", host, repo, err)
			}
			if _, ok := n.(reference.NamedTagged); ok {
				return fmt.Errorf("%s: repository %q: put tags in the list, not the name", host, repo)
			}
			if _, ok := n.(reference.Digested); ok {
				return fmt.Errorf("%s: repository %q: a digest names no tag", host, repo)
			}
			s.Repository = name
			sources = append(sources, s)
			return nil
		}
		for _, repo := range slices.Sorted(maps.Keys(r.Images)) {
			var tags []string
			for _, t := range r.Images[repo] {
				if strings.Contains(t, ":") {
					// skopeo also takes digests here; sync names tags.
					warnings = append(warnings, fmt.Sprintf("%s/%s: %s is a digest, which sync does not take (it mirrors tags)", host, repo, t))
					continue
				}
				tags = append(tags, t)
			}
			if len(r.Images[repo]) > 0 && len(tags) == 0 {
				continue
			}
			if err := add(repo, client.SyncSource{Tags: tags}); err != nil {
				return nil, nil, err
			}
		}
		for _, repo := range slices.Sorted(maps.Keys(r.ImagesByTagRegex)) {
			if err := add(repo, client.SyncSource{TagRegex: r.ImagesByTagRegex[repo]}); err != nil {
				return nil, nil, err
			}
		}
		for _, repo := range slices.Sorted(maps.Keys(r.ImagesBySemver)) {
			if err := add(repo, client.SyncSource{Semver: r.ImagesBySemver[repo]}); err != nil {
				return nil, nil, err
			}
		}
	}
	if len(sources) == 0 {
		return nil, warnings, errors.New("the YAML names no image")
	}
	return sources, warnings, nil
}

// IsFile reports whether a sync SOURCE names a YAML file: it ends in .yaml
// or .yml, or names a file.
func IsFile(src string) bool {
	if strings.HasSuffix(src, ".yaml") || strings.HasSuffix(src, ".yml") {
		return true
	}
	fi, err := os.Stat(src)
	return err == nil && fi.Mode().IsRegular()
}

// Read reads the file name, refusing one of more than MaxSize bytes.
func Read(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxSize {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", name, fi.Size(), MaxSize)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && fi.Size() > 0 {
		return nil, err
	}
	return b, nil
}

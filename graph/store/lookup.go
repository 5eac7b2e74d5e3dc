package store

import (
	"fmt"
	"sort"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
)

// Lookup finds a local image by name, name:tag, name@digest, ID or unique
// short ID. Names are normalised like dockerd (busybox =
// docker.io/library/busybox:latest). A malformed name is InvalidArgument; a
// missing image is NotFound with dockerd's text "No such image: <ref>", where
// ref is the familiar tagged form of a name (nosuchimage → nosuchimage:latest,
// as dockerd answers) and the name as given otherwise.
//
// The record returned is a copy.
func (s *Store) Lookup(name string) (*ImageRecord, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, err := s.st.lookup(name)
	if err != nil {
		return nil, err
	}
	return r.Clone(), nil
}

// NoSuchImage is dockerd's not-found error for name.
func NoSuchImage(name string) error {
	return fmt.Errorf("No such image: %s%.0w", name, errdefs.ErrNotFound)
}

// lookup resolves name in st.
func (st *state) lookup(name string) (*ImageRecord, error) {
	if name == "" {
		return nil, NoSuchImage(name)
	}
	ref, err := reference.ParseAnyReference(name)
	if err != nil {
		return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
	}
	named, isNamed := ref.(reference.Named)
	if !isNamed {
		// A full image ID, with or without "sha256:".
		if d, ok := ref.(reference.Digested); ok {
			if r := st.images[d.Digest()]; r != nil {
				return r, nil
			}
		}
		return nil, NoSuchImage(name)
	}
	if c, ok := named.(reference.Canonical); ok {
		dgst := c.Digest()
		byDigest, err := reference.WithDigest(reference.TrimNamed(named), dgst)
		if err != nil {
			return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
		}
		if id, ok := st.refs[byDigest.String()]; ok {
			return st.images[id], nil
		}
		// name@digest also finds an image whose target (or platform
		// manifest) has that digest and which is known in that repository.
		for _, id := range st.targets[dgst] {
			r := st.images[id]
			if r != nil && inRepository(r, named.Name()) {
				return r, nil
			}
		}
		return nil, NoSuchImage(reference.FamiliarString(byDigest))
	}
	tagged := reference.TagNameOnly(named)
	if id, ok := st.refs[tagged.String()]; ok {
		return st.images[id], nil
	}
	if r := st.byShortID(name); r != nil {
		return r, nil
	}
	return nil, NoSuchImage(reference.FamiliarString(tagged))
}

// byShortID finds the image whose encoded ID starts with prefix (optionally
// "sha256:"-prefixed); nil when none or several match (dockerd treats an
// ambiguous prefix as not found). Binary search over the sorted IDs.
func (st *state) byShortID(prefix string) *ImageRecord {
	p := strings.TrimPrefix(prefix, string(digest.SHA256)+":")
	if p == "" || len(p) > 64 || strings.Trim(p, "0123456789abcdef") != "" {
		return nil
	}
	i := sort.SearchStrings(st.shortID, p)
	if i >= len(st.shortID) || !strings.HasPrefix(st.shortID[i], p) {
		return nil
	}
	if i+1 < len(st.shortID) && strings.HasPrefix(st.shortID[i+1], p) {
		return nil
	}
	return st.images[digest.NewDigestFromEncoded(digest.SHA256, st.shortID[i])]
}

// inRepository reports whether r has a tag or digest reference in the
// repository name (fully qualified).
func inRepository(r *ImageRecord, name string) bool {
	for _, s := range append(append([]string{}, r.RepoTags...), r.RepoDigests...) {
		if n, err := reference.ParseNormalizedNamed(s); err == nil && n.Name() == name {
			return true
		}
	}
	return false
}

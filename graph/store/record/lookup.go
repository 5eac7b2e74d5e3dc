package record

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
)

// Index is what a lookup reads of the records: the store's committed
// records or a change's view of them.
type Index interface {
	// Image is the record of id; nil when none.
	Image(id digest.Digest) (*Image, error)
	// RefTarget is the image a fully qualified reference names.
	RefTarget(ref string) (digest.Digest, bool)
	// ByTarget are the images whose target or platform manifest is d.
	ByTarget(d digest.Digest) []digest.Digest
	// ShortIDs are up to max image IDs beginning with prefix.
	ShortIDs(prefix string, max int) []digest.Digest
}

// NoSuchImage is dockerd's not-found error for name (types.NoSuchImage,
// the wire's one wording).
func NoSuchImage(name string) error { return types.NoSuchImage(name) }

// Lookup finds a local image by name, name:tag, name@digest, ID or unique
// short ID. Names are normalised like dockerd (busybox =
// docker.io/library/busybox:latest). A malformed name is InvalidArgument; a
// missing image is NotFound with dockerd's text "No such image: <ref>", where
// ref is the familiar tagged form of a name (nosuchimage → nosuchimage:latest,
// as dockerd answers) and the name as given otherwise.
func Lookup(v Index, name string) (*Image, error) {

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
			if r, err := v.Image(d.Digest()); r != nil || err != nil {
				return r, err
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
		if id, ok := v.RefTarget(byDigest.String()); ok {
			return imageOrMissing(v, id, name)
		}
		// name@digest also finds an image whose target (or platform
		// manifest) has that digest and which is known in that repository.
		for _, id := range v.ByTarget(dgst) {
			r, err := v.Image(id)
			if err != nil {
				return nil, err
			}
			if r != nil && inRepository(r, named.Name()) {
				return r, nil
			}
		}
		return nil, NoSuchImage(reference.FamiliarString(byDigest))
	}
	tagged := reference.TagNameOnly(named)
	if id, ok := v.RefTarget(tagged.String()); ok {
		return imageOrMissing(v, id, name)
	}
	if r, err := byShortID(v, name); r != nil || err != nil {
		return r, err
	}
	return nil, NoSuchImage(reference.FamiliarString(tagged))
}

// byShortID finds the image whose encoded ID starts with prefix (optionally
// "sha256:"-prefixed); nil when none or several match (dockerd treats an
// ambiguous prefix as not found). A cursor Seek on the images bucket, whose
// keys are the IDs.
func byShortID(v Index, prefix string) (*Image, error) {
	p := strings.TrimPrefix(prefix, string(digest.SHA256)+":")
	if p == "" || len(p) > 64 || strings.Trim(p, "0123456789abcdef") != "" {
		return nil, nil
	}
	ids := v.ShortIDs(string(digest.SHA256)+":"+p, 2)
	if len(ids) != 1 {
		return nil, nil
	}
	return v.Image(ids[0])
}

// imageOrMissing is the record a reference names; a reference naming no
// record (the database is inconsistent) is reported as the name missing.
func imageOrMissing(v Index, id digest.Digest, name string) (*Image, error) {
	r, err := v.Image(id)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, NoSuchImage(name)
	}
	return r, nil
}

// inRepository reports whether r has a tag or digest reference in the
// repository name (fully qualified).
func inRepository(r *Image, name string) bool {
	for _, s := range append(append([]string{}, r.RepoTags...), r.RepoDigests...) {
		if n, err := reference.ParseNormalizedNamed(s); err == nil && n.Name() == name {
			return true
		}
	}
	return false
}

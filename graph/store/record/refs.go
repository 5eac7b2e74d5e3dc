package record

import (
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
)

// References as the records keep them: fully qualified
// (docker.io/library/busybox:latest) on disk and inside the store, familiar
// (busybox:latest) on the API. These helpers sit on
// github.com/distribution/reference, which does the parsing; the store's
// Lookup resolves a name to a record.

// ParseNewTag validates repo and tag as dockerd does and returns the fully
// qualified name:tag. The API server parses its own (api/server's
// repoTagReference, with dockerd's messages) and hands graph the result;
// this one is for the callers holding strings (an import's repo and tag).
func ParseNewTag(repo, tag string) (reference.NamedTagged, error) {
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
	}
	if _, ok := named.(reference.Digested); ok {
		return nil, errDigestTag
	}
	if tag != "" {
		if _, ok := named.(reference.Tagged); ok {
			// repo already carries a tag: dockerd lets the tag parameter win.
			named = reference.TrimNamed(named)
		}
		t, err := reference.WithTag(named, tag)
		if err != nil {
			return nil, fmt.Errorf("%v%.0w", err, errdefs.ErrInvalidArgument)
		}
		named = t
	}
	ref := reference.TagNameOnly(named).(reference.NamedTagged)
	if err := CheckNewTag(ref); err != nil {
		return nil, err
	}
	return ref, nil
}

var (
	errDigestTag    = fmt.Errorf("refusing to create a tag with a digest reference%.0w", errdefs.ErrInvalidArgument)
	errAmbiguousTag = fmt.Errorf("refusing to create an ambiguous tag using digest algorithm as name%.0w", errdefs.ErrInvalidArgument)
)

// CheckNewTag is the store's own rule for a tag it is asked to create, on
// a reference already parsed (no parsing again, see graph.TagImage): a
// plain name:tag, no digest beside it, and a repository not named after
// the digest algorithm, which would make "sha256:<hex>" ambiguous between
// a tag and an image ID.
func CheckNewTag(ref reference.NamedTagged) error {
	if ref == nil {
		return fmt.Errorf("no reference to tag%.0w", errdefs.ErrInvalidArgument)
	}
	if _, ok := ref.(reference.Digested); ok {
		return errDigestTag
	}
	if reference.FamiliarName(ref) == string(digest.Canonical) {
		return errAmbiguousTag
	}
	return nil
}

// Familiar is ref (fully qualified) in its familiar form.
func Familiar(ref string) string {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	return reference.FamiliarString(n)
}

// FamiliarRefs converts fully qualified references to their familiar form.
func FamiliarRefs(refs []string) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, Familiar(r))
	}
	return out
}

// NormaliseRefs parses refs and returns their fully qualified strings;
// canonical=true requires name@digest, false requires name:tag (a bare name
// gets :latest).
func NormaliseRefs(refs []string, canonical bool) ([]string, error) {
	out := make([]string, 0, len(refs))
	for _, s := range refs {
		n, err := reference.ParseNormalizedNamed(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %v%.0w", s, err, errdefs.ErrInvalidArgument)
		}
		if canonical {
			c, ok := n.(reference.Canonical)
			if !ok {
				return nil, fmt.Errorf("%s: not a digest reference%.0w", s, errdefs.ErrInvalidArgument)
			}
			if _, tagged := n.(reference.Tagged); tagged {
				c, _ = reference.WithDigest(reference.TrimNamed(n), c.Digest())
			}
			out = append(out, c.String())
			continue
		}
		if _, ok := n.(reference.Canonical); ok {
			return nil, fmt.Errorf("%s: a digest reference is not a tag%.0w", s, errdefs.ErrInvalidArgument)
		}
		out = append(out, reference.TagNameOnly(n).String())
	}
	return out, nil
}

// Package imageref is an image name parsed once, where it enters the daemon,
// and handed down typed: NAME[:TAG][@DIGEST], either fully qualified (its
// first component is a registry host) or short (no host: searched on each
// registry of the search order in turn, docker.io last). The layers below
// read the decision and never parse the string again; the registry search
// builds each candidate's reference from a short Ref with On.
package imageref

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
)

// Ref is a parsed image name. The zero Ref names nothing.
type Ref struct {
	// named is the name normalised as docker.io would read it
	// (docker.io/library/busybox:1 for "busybox:1"), with its tag and digest.
	named reference.Named
	// repo is the repository as typed, not normalised: a short "busybox"
	// stays "busybox" on another registry, not "library/busybox", and the
	// messages name it as the user did.
	repo  string
	short bool
}

// Parse parses NAME[:TAG][@DIGEST] as typed. A malformed name is
// errdefs.ErrInvalidArgument with distribution/reference's wording.
func Parse(s string) (Ref, error) {
	n, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return Ref{}, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	return Ref{named: n, repo: typedRepo(s), short: !hasRegistryHost(s)}, nil
}

// typedRepo is the repository part of a well-formed NAME[:TAG][@DIGEST]:
// before the '@', and before a ':' that follows the last '/' (an earlier
// one is the host's port).
func typedRepo(s string) string {
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
		s = s[:i]
	}
	return s
}

// ForPull is the name of a pull (POST /images/create?fromImage=NAME&tag=TAG):
// a trailing ':' (docker pull -a sends one) is dropped; TAG, a tag or a
// digest, pins a name without a digest; scratch is refused
// (errdefs.ErrPermissionDenied), as dockerd does. A Ref with neither tag
// nor digest pulls every tag.
func ForPull(fromImage, tag string) (Ref, error) {
	r, err := Parse(strings.TrimSuffix(fromImage, ":"))
	if err != nil {
		return Ref{}, err
	}
	if tag != "" {
		if r, err = r.pin(tag); err != nil {
			return Ref{}, err
		}
	}
	if reference.FamiliarName(r.named) == "scratch" {
		return Ref{}, fmt.Errorf("'scratch' is a reserved name%.0w", errdefs.ErrPermissionDenied)
	}
	return r, nil
}

// pin gives r the tag or digest tag, unless r has a digest already (the
// digest wins over a tag, as in distribution).
// A malformed tag is refused even then.
func (r Ref) pin(tag string) (Ref, error) {
	base := reference.TrimNamed(r.named)
	pinned, err := reference.Named(nil), error(nil)
	if d, derr := digest.Parse(tag); derr == nil {
		pinned, err = reference.WithDigest(base, d)
	} else {
		pinned, err = reference.WithTag(base, tag)
	}
	if err != nil {
		return Ref{}, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	if r.Digest() == "" {
		r.named = pinned
	}
	return r, nil
}

// FromNamed is the Ref of a reference already normalised (a stored repo
// digest or tag): fully qualified.
func FromNamed(n reference.Named) Ref {
	return Ref{named: n, repo: n.Name()}
}

// IsZero reports whether r names nothing.
func (r Ref) IsZero() bool { return r.named == nil }

// Short reports whether the name has no registry host.
func (r Ref) Short() bool { return r.short }

// Named is the name as docker.io reads it: for a fully qualified name the
// name itself, for a short name its docker.io candidate.
func (r Ref) Named() reference.Named { return r.named }

// Tag is the tag, if any.
func (r Ref) Tag() string {
	if t, ok := r.named.(reference.Tagged); ok {
		return t.Tag()
	}
	return ""
}

// Digest is the digest, if any.
func (r Ref) Digest() digest.Digest {
	if d, ok := r.named.(reference.Digested); ok {
		return d.Digest()
	}
	return ""
}

// Repo is r without its tag and digest.
func (r Ref) Repo() Ref {
	r.named = reference.TrimNamed(r.named)
	return r
}

// On is the candidate of a short name on registry host: host/PATH with r's
// tag and digest. A fully qualified name is its own only candidate.
func (r Ref) On(host string) (reference.Named, error) {
	if !r.short {
		return r.named, nil
	}
	n, err := reference.ParseNormalizedNamed(host + "/" + r.repo)
	if err != nil {
		return nil, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	if t := r.Tag(); t != "" {
		if n, err = reference.WithTag(n, t); err != nil {
			return nil, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
		}
	}
	if d := r.Digest(); d != "" {
		if n, err = reference.WithDigest(n, d); err != nil {
			return nil, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
		}
	}
	return n, nil
}

// String is the name as typed, with its tag and digest: a short name stays
// short ("busybox:1").
func (r Ref) String() string {
	s := r.repo
	if t := r.Tag(); t != "" {
		s += ":" + t
	}
	if d := r.Digest(); d != "" {
		s += "@" + d.String()
	}
	return s
}

// hasRegistryHost reports whether what the user typed names a registry: the
// first path component looks like a host (has a '.' or ':', or is
// localhost), as distribution/reference decides.
func hasRegistryHost(name string) bool {
	i := strings.IndexByte(name, '/')
	if i < 0 {
		return false
	}
	first := name[:i]
	return strings.ToLower(first) != first || strings.ContainsAny(first, ".:") || first == "localhost"
}

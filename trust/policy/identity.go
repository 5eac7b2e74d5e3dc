package policy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
)

// The signedIdentity forms of containers-policy.json(5).
const (
	MatchRepoDigestOrExact = "matchRepoDigestOrExact"
	MatchRepository        = "matchRepository"
	MatchExact             = "matchExact"
	ExactReference         = "exactReference"
	ExactRepository        = "exactRepository"
	RemapIdentity          = "remapIdentity"
)

// Identity is a requirement's signedIdentity: which reference a signature
// that names one (legacy simple signing) must name for the image.
type Identity struct {
	Type             string
	DockerReference  string // exactReference
	DockerRepository string // exactRepository
	Prefix           string // remapIdentity
	SignedPrefix     string // remapIdentity
}

func (id Identity) String() string {
	switch id.Type {
	case ExactReference:
		return fmt.Sprintf("%s %s", id.Type, id.DockerReference)
	case ExactRepository:
		return fmt.Sprintf("%s %s", id.Type, id.DockerRepository)
	case RemapIdentity:
		return fmt.Sprintf("%s %s => %s", id.Type, id.Prefix, id.SignedPrefix)
	}
	return id.Type
}

// parseIdentity reads a signedIdentity object. Like containers/image, each
// form takes exactly its own keys, all of them required.
func parseIdentity(path string, data []byte) (Identity, error) {
	typ, err := typeOf(path, data)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{Type: typ}
	var fields map[string]*string
	switch typ {
	case MatchRepoDigestOrExact, MatchRepository, MatchExact:
		fields = map[string]*string{}
	case ExactReference:
		fields = map[string]*string{"dockerReference": &id.DockerReference}
	case ExactRepository:
		fields = map[string]*string{"dockerRepository": &id.DockerRepository}
	case RemapIdentity:
		fields = map[string]*string{"prefix": &id.Prefix, "signedPrefix": &id.SignedPrefix}
	default:
		return Identity{}, errAt(keyPath(path, "type"), ErrUnknownType, "unknown signedIdentity type %q", typ)
	}
	var ignored string
	seen := map[string]bool{}
	if err := object(path, data, func(key string) any {
		if key == "type" {
			return &ignored
		}
		if p, ok := fields[key]; ok {
			seen[key] = true
			return p
		}
		return nil
	}); err != nil {
		return Identity{}, err
	}
	for _, k := range sortedKeys(fields) {
		if !seen[k] {
			return Identity{}, errAt(keyPath(path, k), ErrMissing, "%s requires %q", typ, k)
		}
	}
	switch typ {
	case ExactReference:
		ref, err := reference.ParseNormalizedNamed(id.DockerReference)
		if err != nil {
			return Identity{}, errAt(keyPath(path, "dockerReference"), ErrInvalid, "%q: %v", id.DockerReference, err)
		}
		if reference.IsNameOnly(ref) {
			return Identity{}, errAt(keyPath(path, "dockerReference"), ErrInvalid, "%q has neither a tag nor a digest", id.DockerReference)
		}
	case ExactRepository:
		if _, err := reference.ParseNormalizedNamed(id.DockerRepository); err != nil {
			return Identity{}, errAt(keyPath(path, "dockerRepository"), ErrInvalid, "%q: %v", id.DockerRepository, err)
		}
	case RemapIdentity:
		for _, k := range []string{"prefix", "signedPrefix"} {
			if !validRemapPrefix(*fields[k]) {
				return Identity{}, errAt(keyPath(path, k), ErrInvalid, "%q is not a host[:port], namespace or repository in the fully expanded form", *fields[k])
			}
		}
	}
	return id, nil
}

var (
	remapDomain       = regexp.MustCompile("^" + reference.DomainRegexp.String() + "$")
	remapDomainPrefix = regexp.MustCompile("^" + reference.DomainRegexp.String() + "/")
	remapName         = regexp.MustCompile("^" + reference.NameRegexp.String() + "$")
)

// validRemapPrefix is containers/image's validateIdentityRemappingPrefix: a
// host[:port], or a name that starts with one.
func validRemapPrefix(s string) bool {
	return remapDomain.MatchString(s) || (remapName.MatchString(s) && remapDomainPrefix.MatchString(s))
}

// Matches reports whether a signature naming signed is accepted for an
// image known as image, with containers/image's semantics
// (signature/policy_reference_match.go). image must carry a tag or a digest
// (Evaluate adds ":latest" to a bare name, as containers' docker transport
// does); an unparseable signed reference never matches.
func (id Identity) Matches(image reference.Named, signed string) bool {
	if image == nil {
		return false
	}
	sig, err := reference.ParseNormalizedNamed(signed)
	if err != nil {
		return false
	}
	switch id.Type {
	case MatchExact:
		if reference.IsNameOnly(image) || reference.IsNameOnly(sig) {
			return false
		}
		return sig.String() == image.String()
	case MatchRepoDigestOrExact, "":
		return matchRepoDigestOrExact(image, sig)
	case MatchRepository:
		return sig.Name() == image.Name()
	case ExactReference:
		want, err := reference.ParseNormalizedNamed(id.DockerReference)
		if err != nil || reference.IsNameOnly(want) || reference.IsNameOnly(sig) {
			return false
		}
		return sig.String() == want.String()
	case ExactRepository:
		want, err := reference.ParseNormalizedNamed(id.DockerRepository)
		if err != nil {
			return false
		}
		return sig.Name() == want.Name()
	case RemapIdentity:
		intended, err := id.remap(image)
		if err != nil {
			return false
		}
		return matchRepoDigestOrExact(intended, sig)
	}
	return false
}

func matchRepoDigestOrExact(intended, sig reference.Named) bool {
	if reference.IsNameOnly(sig) {
		return false
	}
	switch intended.(type) {
	case reference.NamedTagged: // also a reference with both a tag and a digest
		return sig.String() == intended.String()
	case reference.Canonical:
		// The digest itself is the verifier's business: the signature was
		// verified over img.Digest, which the reference's digest named.
		return sig.Name() == intended.Name()
	}
	return false
}

// remap replaces Prefix by SignedPrefix in ref when ref's name is Prefix or
// lies under it (a '/' after it), as containers' remapReferencePrefix.
func (id Identity) remap(ref reference.Named) (reference.Named, error) {
	name := ref.Name()
	switch {
	case len(name) < len(id.Prefix):
		return ref, nil
	case len(name) == len(id.Prefix):
		if name != id.Prefix {
			return ref, nil
		}
	default:
		if !strings.HasPrefix(name, id.Prefix) || name[len(id.Prefix)] != '/' {
			return ref, nil
		}
	}
	s := ref.String()
	return reference.ParseNamed(strings.Replace(s, id.Prefix, id.SignedPrefix, 1))
}

// identityFromJSON parses an optional signedIdentity: absent means
// matchRepoDigestOrExact.
func identityFromJSON(path string, raw json.RawMessage) (Identity, error) {
	if raw == nil {
		return Identity{Type: MatchRepoDigestOrExact}, nil
	}
	return parseIdentity(path, raw)
}

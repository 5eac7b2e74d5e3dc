package policy

import (
	"regexp"
	"sort"
	"strings"

	"github.com/distribution/reference"
)

// Scope names used by For and in a Verdict besides the transports.docker
// keys themselves.
const (
	ScopeTransportDefault = ""        // transports.docker[""]
	ScopeDefault          = "default" // the top-level default
)

var (
	hostPort = regexp.MustCompile("^" + reference.DomainRegexp.String() + "$")
	// A wildcard is "*." and a host name without a port: containers/image
	// builds "*.example.com" from the host with its port stripped.
	wildcardHost = regexp.MustCompile(`^\*\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*$`)
)

// validateScope checks a transports.docker key. containers/image's docker
// transport accepts any string here (its ValidatePolicyConfigurationScope
// is a FIXME returning nil), so a typo such as "busybox" or
// "docker.io/busybox:latest" silently never matches and the image falls
// through to a more general scope. wharf rejects a scope that For could
// never produce:
//
//	host[:port]                        docker.io, localhost:5000
//	host[:port]/namespace.../repo      docker.io/library, quay.io/org/app
//	host[:port]/repo:tag               docker.io/library/alpine:3
//	host[:port]/repo@digest            docker.io/library/alpine@sha256:…
//	*.domain                           *.example.com (no port, no other '*')
//
// The host is what distribution/reference takes for a registry (it has a
// '.' or a ':', or is localhost) and never index.docker.io (normalised to
// docker.io); a name is in the fully expanded form (docker.io/library/
// busybox, not busybox); a reference does not carry both a tag and a
// digest.
func validateScope(scope string) (reason string, ok bool) {
	switch {
	case scope == "":
		return "", true
	case strings.HasPrefix(scope, "*."):
		if wildcardHost.MatchString(scope) {
			return "", true
		}
		return "a wildcard is \"*.\" followed by a host name without a port (*.example.com)", false
	case strings.Contains(scope, "*"):
		return "'*' is allowed only as a leading \"*.\"", false
	}
	host, rest, hasPath := strings.Cut(scope, "/")
	if !hostPort.MatchString(host) || !(host == "localhost" || strings.ContainsAny(host, ".:") || strings.ToLower(host) != host) {
		if n, err := reference.ParseNormalizedNamed(scope); err == nil && hasPath {
			return "not in the fully expanded form (" + n.String() + ")", false
		}
		return "does not start with a registry host[:port] (one with a '.' or a ':', or localhost)", false
	}
	if strings.EqualFold(host, "index.docker.io") {
		return "index.docker.io is normalised to docker.io", false
	}
	if !hasPath {
		return "", true
	}
	ref, err := reference.ParseNamed(scope)
	if err == nil && ref.String() == scope {
		_, tagged := ref.(reference.Tagged)
		_, digested := ref.(reference.Digested)
		if tagged && digested {
			return "a scope names a tag or a digest, not both", false
		}
		return "", true
	}
	// docker.io/<one component> is a namespace (docker.io/library, a
	// user's docker.io/bitnami), though not a canonical repository name.
	if host == "docker.io" && !strings.ContainsAny(rest, "/:@") {
		if _, err := reference.ParseNamed("docker.io/library/" + rest); err == nil {
			return "", true
		}
	}
	if n, err2 := reference.ParseNormalizedNamed(scope); err2 == nil && n.String() != scope {
		return "not in the fully expanded form (" + n.String() + ")", false
	}
	if err != nil {
		return err.Error(), false
	}
	return "not a repository, namespace or reference", false
}

// identity is the most specific scope for ref, containers/image's
// PolicyConfigurationIdentity for the docker transport: the normalised
// name with its tag ("docker.io/library/alpine:3") or digest. A bare name
// gets ":latest" first, as containers' docker transport parses it. A
// reference with both a tag and a digest (which containers cannot
// represent) is looked up by its digest: the digest is what is pulled.
func identity(ref reference.Named) string {
	ref = reference.TagNameOnly(ref)
	name := foldedName(ref)
	if d, ok := ref.(reference.Digested); ok {
		return name + "@" + d.Digest().String()
	}
	if t, ok := ref.(reference.Tagged); ok {
		return name + ":" + t.Tag()
	}
	return name
}

// foldedName is ref's name with its registry host in lower case. Host
// names are case-insensitive (RFC 4343): LOCALHOST:5000/app and
// localhost:5000/app reach the same registry, so they must meet the same
// scope. The path is already lower case (distribution/reference refuses
// upper case there); the host is the only part a user can vary.
func foldedName(ref reference.Named) string {
	d := reference.Domain(ref)
	if d == "" {
		return ref.Name()
	}
	return strings.ToLower(d) + "/" + reference.Path(ref)
}

// foldScopeHost lowers the host of a transports.docker key (the part
// before the first '/', a "*." wildcard included), as foldedName does for
// the names looked up.
func foldScopeHost(scope string) string {
	host, rest, hasPath := strings.Cut(scope, "/")
	host = strings.ToLower(host)
	if !hasPath {
		return host
	}
	return host + "/" + rest
}

// namespaces is containers/image's DockerReferenceNamespaces: the
// repository, each parent namespace, the host[:port], then "*." wildcards
// of the host (port stripped) from the most specific.
func namespaces(ref reference.Named) []string {
	var res []string
	name := foldedName(ref)
	for {
		res = append(res, name)
		i := strings.LastIndex(name, "/")
		if i == -1 {
			break
		}
		name = name[:i]
	}
	if i := strings.Index(name, ":"); i != -1 {
		name = name[:i]
	}
	for {
		i := strings.Index(name, ".")
		if i == -1 {
			break
		}
		name = name[i+1:]
		res = append(res, "*."+name)
	}
	return res
}

// Candidates lists the scopes For tries for ref, most specific first,
// ending with "" (transports.docker's default) and "default".
func Candidates(ref reference.Named) []string {
	c := append([]string{identity(ref)}, namespaces(ref)...)
	return append(c, ScopeTransportDefault, ScopeDefault)
}

// For returns the scope that applies to ref and its requirements: the
// first of Candidates(ref) the policy defines, as containers/image's
// requirementsForImageRef for the docker transport. Only the most specific
// scope applies; the more general ones are ignored.
func (p *Policy) For(ref reference.Named) (scope string, reqs Requirements) {
	if ref != nil {
		for _, s := range Candidates(ref) {
			if s == ScopeDefault {
				break
			}
			if r, ok := p.docker[s]; ok {
				return s, r
			}
		}
	}
	return ScopeDefault, p.def
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

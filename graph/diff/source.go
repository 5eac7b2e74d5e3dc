package diff

import (
	"net/url"
	"strings"

	"github.com/wharfproject/wharf/api/types"
)

// The OCI labels (and annotations) the source section reads.
const (
	labelSource   = "org.opencontainers.image.source"
	labelRevision = "org.opencontainers.image.revision"
)

// maxSourceLen caps the repository and revision values read from labels
// (2,048 bytes each): a URL longer than browsers keep is no link, and the
// label is the image author's text.
const maxSourceLen = 2048

// Source is the source section from each side's labels: the repository
// and revision, and a compare link when both name one repository of a
// forge with compare pages and two revisions.
func Source(a, b map[string]string) *types.SourceDiff {
	d := &types.SourceDiff{
		FromRepository: capped(a[labelSource]), FromRevision: capped(a[labelRevision]),
		ToRepository: capped(b[labelSource]), ToRevision: capped(b[labelRevision]),
	}
	d.CompareURL = CompareURL(d.FromRepository, d.ToRepository, d.FromRevision, d.ToRevision)
	return d
}

func capped(s string) string {
	if len(s) > maxSourceLen {
		return ""
	}
	return s
}

// CompareURL is the forge's page comparing revision from with to when
// both repositories are one (compared as the forge's host and path, so
// that "git@host:o/r.git" and "https://host/o/r" agree): GitHub's and
// Gitea's (Codeberg, Forgejo) /compare/A...B, GitLab's /-/compare/A...B.
// "" when the forge is unknown, the repositories differ, or a revision is
// missing or the same.
func CompareURL(fromRepo, toRepo, from, to string) string {
	fa, ok1 := parseRepo(fromRepo)
	fb, ok2 := parseRepo(toRepo)
	if !ok1 || !ok2 || fa != fb || from == "" || to == "" || from == to || !safeRevision(from) || !safeRevision(to) {
		return ""
	}
	base := "https://" + fa.host + "/" + fa.path
	switch forgeOf(fa.host) {
	case forgeGitHub, forgeGitea:
		return base + "/compare/" + from + "..." + to
	case forgeGitLab:
		return base + "/-/compare/" + from + "..." + to
	}
	return ""
}

type repoName struct{ host, path string }

// parseRepo reads a repository's URL as images name it: https, http,
// git+https, ssh, or scp-like "git@host:owner/repo", a ".git" suffix and
// a trailing slash dropped, and a tree/blob path after the repository
// dropped for the two-part forges.
func parseRepo(s string) (repoName, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return repoName{}, false
	}
	if i := strings.Index(s, "://"); i < 0 {
		// scp-like: [user@]host:path
		at := strings.LastIndex(s[:max(strings.IndexByte(s, ':'), 0)], "@")
		if host, p, ok := strings.Cut(s[at+1:], ":"); ok {
			s = "ssh://" + host + "/" + p
		} else {
			s = "https://" + s // "host/owner/repo"
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return repoName{}, false
	}
	switch strings.TrimPrefix(u.Scheme, "git+") {
	case "https", "http", "ssh", "git":
	default:
		return repoName{}, false
	}
	p := strings.Trim(u.Path, "/")
	p = strings.TrimSuffix(p, ".git")
	parts := strings.Split(p, "/")
	for _, part := range parts {
		if part == "" || part == "." || part == ".." {
			return repoName{}, false
		}
	}
	if len(parts) < 2 {
		return repoName{}, false
	}
	host := strings.ToLower(u.Hostname())
	switch forgeOf(host) {
	case forgeGitHub, forgeGitea:
		// owner/repo; the rest is a page inside it (tree/main/…).
		parts = parts[:2]
	case forgeGitLab:
		// Groups nest: everything up to "-" is the project.
		for i, part := range parts {
			if part == "-" {
				parts = parts[:i]
				break
			}
		}
	}
	return repoName{host: host, path: strings.Join(parts, "/")}, true
}

type forge int

const (
	forgeUnknown forge = iota
	forgeGitHub
	forgeGitLab
	forgeGitea
)

// forgeOf tells a forge by its host: the public ones by name, a
// self-hosted GitLab or Gitea (Forgejo) by the name in its host.
func forgeOf(host string) forge {
	switch {
	case host == "github.com":
		return forgeGitHub
	case host == "gitlab.com" || strings.HasPrefix(host, "gitlab."):
		return forgeGitLab
	case host == "codeberg.org" || strings.HasPrefix(host, "gitea.") || strings.HasPrefix(host, "forgejo."):
		return forgeGitea
	}
	return forgeUnknown
}

// safeRevision admits what a commit, tag or branch name may be in a URL
// path: letters, digits and "._-/+"; nothing a link could be bent with.
func safeRevision(r string) bool {
	if len(r) > 256 || strings.Contains(r, "..") {
		return false
	}
	for _, c := range r {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.ContainsRune("._-/+", c):
		default:
			return false
		}
	}
	return true
}

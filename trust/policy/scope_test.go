package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestFor(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	scopes := []string{
		"docker.io/library/busybox:latest", "docker.io/library/busybox@" + d, "docker.io/library/busybox",
		"docker.io/library", "docker.io", "quay.io/a/b/c", "quay.io/a", "*.example.com", "*.com",
		"registry.example.com:5000", "",
	}
	var b strings.Builder
	b.WriteString(`{"default":[{"type":"reject"}],"transports":{"docker":{`)
	for i, s := range scopes {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"` + s + `":[{"type":"insecureAcceptAnything"}]`)
	}
	b.WriteString(`}}}`)
	p := mustParse(t, b.String(), Options{})
	for _, c := range []struct{ ref, scope string }{
		{"busybox", "docker.io/library/busybox:latest"},
		{"busybox:latest", "docker.io/library/busybox:latest"},
		{"docker.io/library/busybox:1", "docker.io/library/busybox"},
		{"busybox@" + d, "docker.io/library/busybox@" + d},
		{"busybox:1@" + d, "docker.io/library/busybox@" + d},
		{"busybox@sha256:" + strings.Repeat("a", 64), "docker.io/library/busybox"},
		{"alpine:3", "docker.io/library"},
		{"bitnami/redis", "docker.io"},
		{"quay.io/a/b/c/d:1", "quay.io/a/b/c"},
		{"quay.io/a/b/c:1", "quay.io/a/b/c"},
		{"quay.io/a/b/x", "quay.io/a"},
		{"quay.io/ab/x", ""},
		{"quay.io/z", ""},
		{"r.example.com/x", "*.example.com"},
		{"a.b.example.com/x/y", "*.example.com"},
		{"registry.example.com:5000/x", "registry.example.com:5000"},
		{"registry.example.com:6000/x", "*.example.com"},
		{"foo.com/x", "*.com"},
		{"example.org/x", ""},
		{"localhost:5000/x", ""},
	} {
		if got, reqs := p.For(named(t, c.ref)); got != c.scope || len(reqs) != 1 || reqs[0].Type != TypeInsecureAcceptAnything {
			t.Errorf("For(%s) = %q, want %q", c.ref, got, c.scope)
		}
	}
	if got := p.Scopes(); len(got) != len(scopes) || got[0] != "" || got[1] != "*.com" {
		t.Errorf("Scopes = %q", got)
	}
	q := mustParse(t, `{"default":[{"type":"reject"}],"transports":{"atomic":{"":[{"type":"insecureAcceptAnything"}]}}}`, Options{})
	if s, reqs := q.For(named(t, "busybox")); s != ScopeDefault || reqs[0].Type != TypeReject {
		t.Errorf("without docker scopes: %q", s)
	}
	if s, _ := q.For(nil); s != ScopeDefault {
		t.Errorf("For(nil) = %q", s)
	}
}

func TestCandidates(t *testing.T) {
	got := strings.Join(Candidates(named(t, "example.com:8443/ns/repo:tag")), " | ")
	want := "example.com:8443/ns/repo:tag | example.com:8443/ns/repo | example.com:8443/ns | example.com:8443 | *.com |  | default"
	if got != want {
		t.Errorf("Candidates =\n%s\nwant\n%s", got, want)
	}
	got = strings.Join(Candidates(named(t, "a.b.c.io/x")), " | ")
	want = "a.b.c.io/x:latest | a.b.c.io/x | a.b.c.io | *.b.c.io | *.c.io | *.io |  | default"
	if got != want {
		t.Errorf("Candidates =\n%s\nwant\n%s", got, want)
	}
}

func TestValidateScopeAcceptsEveryCandidate(t *testing.T) {
	for _, r := range []string{"busybox", "busybox:1", "bitnami/redis@sha256:" + strings.Repeat("b", 64), "localhost/x", "localhost:5000/a/b/c:d", "a.b.example.com:443/x/y", "Upper.example/x"} {
		for _, s := range Candidates(named(t, r)) {
			if s == ScopeDefault {
				continue
			}
			if why, ok := validateScope(s); !ok {
				t.Errorf("candidate %q of %s rejected: %s", s, r, why)
			}
		}
	}
}

// Host names ignore case: a name and a scope that differ only in the
// host's case meet, whichever side is upper case; two scopes that differ
// only there are one scope written twice.
func TestForFoldsHostCase(t *testing.T) {
	p := mustParse(t, `{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker":{
	  "localhost:5000/key/a":[{"type":"reject"}],
	  "REGISTRY.Example.com/x":[{"type":"reject"}],
	  "*.EXAMPLE.org":[{"type":"reject"}]}}}`, Options{})
	for _, c := range []struct{ ref, scope string }{
		{"LOCALHOST:5000/key/a", "localhost:5000/key/a"},
		{"LocalHost:5000/key/a:1", "localhost:5000/key/a"},
		{"localhost:5000/key/a", "localhost:5000/key/a"},
		{"registry.example.com/x:1", "registry.example.com/x"},
		{"Registry.EXAMPLE.com/x@sha256:" + strings.Repeat("c", 64), "registry.example.com/x"},
		{"R.Example.ORG/y", "*.example.org"},
	} {
		if got, reqs := p.For(named(t, c.ref)); got != c.scope || reqs[0].Type != TypeReject {
			t.Errorf("For(%s) = %q, want %q", c.ref, got, c.scope)
		}
	}
	_, err := Parse([]byte(`{"default":[{"type":"reject"}],"transports":{"docker":{
	  "localhost:5000/a":[{"type":"reject"}],"LOCALHOST:5000/a":[{"type":"insecureAcceptAnything"}]}}}`), "", Options{})
	if !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("two spellings of one scope: %v, want ErrDuplicateKey", err)
	}
}

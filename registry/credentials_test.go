package registry

import (
	"testing"

	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/wharfproject/wharf/registry/transport"
)

// A per-registry map gives each registry its own set, bound to it, and
// nothing to a registry the map does not name.
func TestRegistriesMapBinding(t *testing.T) {
	m := map[string]registrytypes.AuthConfig{
		"src.example:5000":            {Username: "s", Password: "ps", ServerAddress: "elsewhere.example"},
		"https://index.docker.io/v1/": {Username: "hub"},
		"empty.example":               {},
	}
	for _, tc := range []struct{ index, user, addr string }{
		{"src.example:5000", "s", "src.example:5000"},
		{"docker.io", "hub", "https://index.docker.io/v1/"},
		{"index.docker.io", "hub", "https://index.docker.io/v1/"},
		{"dst.example", "", ""},
		{"src.example", "", ""},
		{"empty.example", "", ""},
	} {
		got := Credentials{Registries: m}.bound(tc.index).Auth
		if tc.user == "" {
			if got != nil {
				t.Errorf("%s: got %+v, want none", tc.index, got)
			}
			continue
		}
		if got == nil || got.Username != tc.user || got.ServerAddress != tc.addr {
			t.Errorf("%s: got %+v, want %s bound to %s", tc.index, got, tc.user, tc.addr)
			continue
		}
		// Bound: the credential function sends it to that registry only.
		cf := sendBound(got, tc.index)
		if c := cf("dst.example"); c.Username != "" {
			t.Errorf("%s: credentials offered to dst.example", tc.index)
		}
		if c := cf(tc.index); c.Username != tc.user {
			t.Errorf("%s: credentials not offered to their registry", tc.index)
		}
	}
}

// sendBound is what a repository of index hands its transport.Client for ac: bound to
// index when unbound, and sent to index's host only.
func sendBound(ac *registrytypes.AuthConfig, index string) transport.CredentialFunc {
	c := Credentials{Auth: ac}.bound(index)
	return sendOnlyTo(c.For(index), index)
}

func TestCredentialsOnlyForTheirHost(t *testing.T) {
	hub := sendBound(&registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: "https://index.docker.io/v1/"}, "docker.io")
	for host, want := range map[string]bool{"registry-1.docker.io": true, "docker.io": true, "index.docker.io": true, "evil.example.com": false, "mirror.example.com": false} {
		c := hub(host)
		if (c.Username == "u") != want {
			t.Errorf("hub credentials for %s: %v, want %v", host, c.Username == "u", want)
		}
	}
	local := sendBound(&registrytypes.AuthConfig{Username: "u", Password: "p"}, "localhost:5000")
	if c := local("localhost:5000"); c.Username != "u" {
		t.Errorf("empty ServerAddress: credentials not given to the request's registry")
	}
	if c := local("localhost:5001"); c.Username != "" {
		t.Errorf("credentials given to another port")
	}
}

// Either form of Credentials goes through bound: a map gives the set keyed
// by the registry, one set keeps its own address or takes the registry's.
func TestBoundTakesEitherForm(t *testing.T) {
	m := Credentials{Registries: map[string]registrytypes.AuthConfig{"src.example": {Username: "s"}, "dst.example": {Username: "d"}}}
	if ac := m.bound("src.example").Auth; ac == nil || ac.Username != "s" || ac.ServerAddress != "src.example" {
		t.Errorf("map bound to src.example: %+v", ac)
	}
	if b := m.bound("other.example"); b.Auth != nil || b.Registries != nil {
		t.Errorf("map bound to a registry it does not name: %+v", b)
	}
	one := Credentials{Auth: &registrytypes.AuthConfig{Username: "u"}}
	b := one.bound("a.example")
	if b.For("a.example") == nil || b.For("b.example") != nil || b.For("a.example").ServerAddress != "a.example" {
		t.Errorf("one unbound set bound to a.example: %+v", b.Auth)
	}
	if one.Auth.ServerAddress != "" {
		t.Errorf("bound changed the caller's set")
	}
	elsewhere := Credentials{Auth: &registrytypes.AuthConfig{Username: "u", ServerAddress: "b.example"}}.bound("a.example")
	if elsewhere.For("a.example") != nil || elsewhere.For("b.example") == nil {
		t.Errorf("a set bound to b.example: %+v", elsewhere.Auth)
	}
}

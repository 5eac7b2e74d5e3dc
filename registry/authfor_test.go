package registry

import (
	"testing"

	registrytypes "github.com/moby/moby/api/types/registry"
)

// AuthFor gives each registry its own set, bound to it, and nothing to a
// registry the map does not name.
func TestAuthFor(t *testing.T) {
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
		got := AuthFor(m, tc.index)
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
		cf := credentialFunc(got, "ignored")
		if c, _ := cf(t.Context(), "dst.example"); c.Username != "" {
			t.Errorf("%s: credentials offered to dst.example", tc.index)
		}
	}
}

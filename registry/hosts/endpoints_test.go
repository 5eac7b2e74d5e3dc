package hosts

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The endpoints of a registry, in the order reads try them: daemon.json's
// registry-mirrors (docker.io only), then hosts.toml's mirrors in file
// order, the upstream last; the registry's own API host is probed, a
// hosts.toml host keeps the scheme and root written.
func TestEndpointsInOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(host, toml string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, host, "hosts.toml"), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docker.io", `[host."http://hub-mirror.local:5000"]
  capabilities = ["pull"]
`)
	write("r.example", `server = "https://upstream.example/prefix"
[host."https://mirror.example"]
  capabilities = ["pull", "resolve"]
`)
	c, err := New(Options{CertsDirs: []string{dir}, Mirrors: []string{"https://daemon-mirror.example"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		index string
		want  []Endpoint
	}{
		{"docker.io", []Endpoint{
			{Host: "daemon-mirror.example", Mirror: true, Caps: CapPull | CapResolve},
			{Host: "hub-mirror.local:5000", PlainHTTP: true, Mirror: true, Caps: CapPull},
			{Host: "registry-1.docker.io", Probe: true, Caps: CapAll},
		}},
		{"r.example", []Endpoint{
			{Host: "mirror.example", Mirror: true, Caps: CapPull | CapResolve},
			{Host: "upstream.example", Root: "/prefix/v2", Rooted: true, Caps: CapAll},
		}},
		{"other.example:5000", []Endpoint{
			{Host: "other.example:5000", Probe: true, Caps: CapAll},
		}},
	} {
		if got := c.Endpoints(tc.index); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.index, got, tc.want)
		}
	}
}

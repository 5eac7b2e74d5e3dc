package hosts

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// containerdHostsToml is containerd's own example
// (core/remotes/docker/config/hosts_test.go, TestParseHostFile).
const containerdHostsToml = `
server = "https://test-default.registry"
ca = "/etc/path/default"
[header]
  x-custom-1 = "custom header"

[host."https://mirror.registry"]
  capabilities = ["pull"]
  ca = "/etc/certs/mirror.pem"
  skip_verify = false
  [host."https://mirror.registry".header]
    x-custom-2 = ["value1", "value2"]

[host."https://mirror-bak.registry/us"]
  capabilities = ["pull"]
  skip_verify = true

[host."http://mirror.registry"]
  capabilities = ["pull"]

[host."https://test-1.registry"]
  capabilities = ["pull", "resolve", "push", "referrers"]
  ca = ["/etc/certs/test-1-ca.pem", "/etc/certs/special.pem"]
  client = [["/etc/certs/client.cert", "/etc/certs/client.key"],["/etc/certs/client.pem", ""]]

[host."https://test-2.registry"]
  client = "/etc/certs/client.pem"

[host."https://test-3.registry"]
  client = ["/etc/certs/client-1.pem", "/etc/certs/client-2.pem"]

[host."https://no-referrers.registry"]
  capabilities = ["pull", "resolve", "push"]
  client = ["/etc/certs/client-1.pem", "/etc/certs/client-2.pem"]

[host."https://noncompliantmirror.registry/v2/namespaceprefix"]
  capabilities = ["pull"]
  override_path = true

[host."https://noprefixnoncompliant.registry"]
  override_path = true

[host."https://onlyheader.registry".header]
  x-custom-1 = "justaheader"

[host."https://dial-timeout.registry"]
  dial_timeout = "3s"
`

func TestParseHostsFileContainerdExample(t *testing.T) {
	tb, fb := true, false
	want := []hostConfig{
		{scheme: "https", host: "mirror.registry", path: "/v2", caps: CapPull, caCerts: []string{"/etc/certs/mirror.pem"}, skipVerify: &fb, header: http.Header{"X-Custom-2": {"value1", "value2"}}},
		{scheme: "https", host: "mirror-bak.registry", path: "/us/v2", caps: CapPull, skipVerify: &tb},
		{scheme: "http", host: "mirror.registry", path: "/v2", caps: CapPull},
		{scheme: "https", host: "test-1.registry", path: "/v2", caps: CapAll, caCerts: []string{"/etc/certs/test-1-ca.pem", "/etc/certs/special.pem"},
			clientPairs: [][2]string{{"/etc/certs/client.cert", "/etc/certs/client.key"}, {"/etc/certs/client.pem", ""}}},
		{scheme: "https", host: "test-2.registry", path: "/v2", caps: CapAll, clientPairs: [][2]string{{"/etc/certs/client.pem", ""}}},
		{scheme: "https", host: "test-3.registry", path: "/v2", caps: CapAll, clientPairs: [][2]string{{"/etc/certs/client-1.pem", ""}, {"/etc/certs/client-2.pem", ""}}},
		{scheme: "https", host: "no-referrers.registry", path: "/v2", caps: CapPull | CapResolve | CapPush, clientPairs: [][2]string{{"/etc/certs/client-1.pem", ""}, {"/etc/certs/client-2.pem", ""}}},
		{scheme: "https", host: "noncompliantmirror.registry", path: "/v2/namespaceprefix", caps: CapPull},
		{scheme: "https", host: "noprefixnoncompliant.registry", path: "", caps: CapAll},
		{scheme: "https", host: "onlyheader.registry", path: "/v2", caps: CapAll, header: http.Header{"X-Custom-1": {"justaheader"}}},
		{scheme: "https", host: "dial-timeout.registry", path: "/v2", caps: CapAll},
		{scheme: "https", host: "test-default.registry", path: "/v2", caps: CapAll, caCerts: []string{"/etc/path/default"}, header: http.Header{"X-Custom-1": {"custom header"}}},
	}
	got, err := parseHostsFile("", []byte(containerdHostsToml))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d hosts, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("host %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestParseHostsFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		toml    string
		want    []hostConfig // host, scheme, path, caps compared; nil with wantErr
		wantErr string
	}{
		{name: "empty: the default server", toml: "", want: []hostConfig{{caps: CapAll}}},
		{name: "server without scheme is https", toml: `server = "registry.example.com"`,
			want: []hostConfig{{scheme: "https", host: "registry.example.com", path: "/v2", caps: CapAll}}},
		{name: "server with /v2 already", toml: `server = "https://r.example/v2"`,
			want: []hostConfig{{scheme: "https", host: "r.example", path: "/v2", caps: CapAll}}},
		{name: "server path with override_path is used as is", toml: "server = \"https://r.example/api/\"\noverride_path = true",
			want: []hostConfig{{scheme: "https", host: "r.example", path: "/api", caps: CapAll}}},
		{name: "host names are lower-cased", toml: `[host."http://Mirror.Example:5000"]`,
			want: []hostConfig{{scheme: "http", host: "mirror.example:5000", path: "/v2", caps: CapAll}, {caps: CapAll}}},
		{name: "mirrors keep the file's order", toml: "[host.\"https://b\"]\n[host.\"https://a\"]\n[host.\"https://b\".header]\nx = \"y\"\n[host.\"https://c\"]",
			want: []hostConfig{{scheme: "https", host: "b", path: "/v2", caps: CapAll}, {scheme: "https", host: "a", path: "/v2", caps: CapAll}, {scheme: "https", host: "c", path: "/v2", caps: CapAll}, {caps: CapAll}}},
		{name: "capabilities are case-insensitive", toml: "[host.\"https://m\"]\ncapabilities = [\"PULL\", \"Resolve\"]",
			want: []hostConfig{{scheme: "https", host: "m", path: "/v2", caps: CapPull | CapResolve}, {caps: CapAll}}},
		{name: "unknown capability", toml: "[host.\"https://m\"]\ncapabilities = [\"delete\"]", wantErr: `unknown capability "delete"`},
		{name: "ftp scheme", toml: `server = "ftp://r.example"`, wantErr: `unsupported scheme "ftp"`},
		{name: "credentials in the URL are refused and not repeated", toml: `[host."https://user:pw@m.example"]`, wantErr: "username/password not allowed"},
		{name: "query string", toml: `server = "https://r.example/?x=1"`, wantErr: "query or fragment"},
		{name: "bad host", toml: `server = "https://exa mple"`, wantErr: "not a URL"},
		{name: "ca of the wrong type", toml: "ca = 5", wantErr: "ca: want a path"},
		{name: "client pair of three", toml: `client = [["a", "b", "c"]]`, wantErr: "client: want [certificate, key] pairs"},
		{name: "header of the wrong type", toml: "[header]\nx = 1", wantErr: `header "x"`},
		{name: "not TOML", toml: "[host.\"https://m\"\ncapabilities = 1", wantErr: "invalid TOML"},
		{name: "too large", toml: "# " + strings.Repeat("x", maxHostsFile), wantErr: "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseHostsFile("/base", []byte(tc.toml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "pw@") {
					t.Errorf("error repeats a password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var short []hostConfig
			for _, h := range got {
				short = append(short, hostConfig{scheme: h.scheme, host: h.host, path: h.path, caps: h.caps})
			}
			if !reflect.DeepEqual(short, tc.want) {
				t.Errorf("got  %+v\nwant %+v", short, tc.want)
			}
		})
	}
}

func TestParseHostsFileRelativePaths(t *testing.T) {
	got, err := parseHostsFile("/etc/wharf/certs.d/r.example", []byte("ca = \"ca.crt\"\nclient = [[\"c.cert\", \"c.key\"]]"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/etc/wharf/certs.d/r.example/ca.crt"}; !reflect.DeepEqual(got[0].caCerts, want) {
		t.Errorf("ca %v, want %v", got[0].caCerts, want)
	}
	if want := [][2]string{{"/etc/wharf/certs.d/r.example/c.cert", "/etc/wharf/certs.d/r.example/c.key"}}; !reflect.DeepEqual(got[0].clientPairs, want) {
		t.Errorf("client %v, want %v", got[0].clientPairs, want)
	}
}

func TestHostDirNames(t *testing.T) {
	for in, want := range map[string][]string{
		"r.example":      {"r.example"},
		"localhost:5000": {"localhost_5000_", "localhost:5000"},
	} {
		if got := hostDirNames(in); !reflect.DeepEqual(got, want) {
			t.Errorf("hostDirNames(%q) = %v, want %v", in, got, want)
		}
		if got := hostOfDirName(hostDirNames(in)[0]); got != in {
			t.Errorf("hostOfDirName(%q) = %q, want %q", hostDirNames(in)[0], got, in)
		}
	}
}

// TestLoadHostsFilesFirstDirWins: certs dirs are searched in order, and a
// broken file names itself.
func TestLoadHostsFilesFirstDirWins(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write := func(dir, host, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, host), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, host, "hosts.toml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(a, "localhost_5000_", `[host."http://first:1"]`)
	write(b, "localhost:5000", `[host."http://second:1"]`)
	write(b, "docker.io", `[host."https://hub-mirror.example"]`)
	hosts, err := loadHostsFiles([]string{a, b, filepath.Join(a, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	if got := hosts["localhost:5000"].mirrors[0].host; got != "first:1" {
		t.Errorf("localhost:5000 mirror %q, want first:1 (first dir wins)", got)
	}
	if got := hosts["docker.io"]; got == nil || got.server != nil || got.mirrors[0].host != "hub-mirror.example" {
		t.Errorf("docker.io: %+v", got)
	}
	write(b, "broken.example", "capabilities = [")
	if _, err := loadHostsFiles([]string{a, b}); err == nil || !strings.Contains(err.Error(), filepath.Join(b, "broken.example", "hosts.toml")) {
		t.Errorf("a broken file: error %v, want one naming the file", err)
	}
}

func FuzzParseHostsFile(f *testing.F) {
	f.Add(containerdHostsToml)
	f.Add(`server = "http://localhost:5000"`)
	f.Add("[host.\"https://m\"]\ncapabilities = [\"pull\"]\nclient = [[\"a\", \"\"]]")
	f.Add("[host.\"\"]")
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := parseHostsFile("/base", []byte(s))
		if err != nil {
			return
		}
		if len(hosts) == 0 {
			t.Fatalf("no hosts and no error for %q", s)
		}
		for i, h := range hosts {
			if i < len(hosts)-1 && h.host == "" {
				t.Fatalf("mirror %d without a host for %q", i, s)
			}
			if h.host != "" && h.scheme != "http" && h.scheme != "https" {
				t.Fatalf("scheme %q for %q", h.scheme, s)
			}
		}
	})
}

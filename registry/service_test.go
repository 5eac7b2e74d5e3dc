package registry

import (
	"encoding/base64"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/wharfproject/wharf/registry/hosts"
)

func TestCandidates(t *testing.T) {
	tests := []struct {
		name    string
		opts    ServiceOptions
		in      string
		want    []string
		errIs   func(error) bool
		errText string
	}{
		{name: "short name", in: "busybox", want: []string{"docker.io/library/busybox"}},
		{name: "short with tag", in: "busybox:1.36", want: []string{"docker.io/library/busybox:1.36"}},
		{name: "user repo", in: "team/app", want: []string{"docker.io/team/app"}},
		{name: "full docker.io", in: "docker.io/library/busybox", want: []string{"docker.io/library/busybox"}},
		{name: "index alias", in: "index.docker.io/library/busybox", want: []string{"docker.io/library/busybox"}},
		{name: "host with port", in: "localhost:5000/app:1", want: []string{"localhost:5000/app:1"}},
		{name: "localhost", in: "localhost/app", want: []string{"localhost/app"}},
		{name: "digest", in: "busybox@sha256:" + strings.Repeat("a", 64), want: []string{"docker.io/library/busybox@sha256:" + strings.Repeat("a", 64)}},
		{name: "additional registries in order", opts: ServiceOptions{AddRegistries: []string{"r1.example.com", "r2.example.com:5000"}}, in: "app:1",
			want: []string{"r1.example.com/app:1", "r2.example.com:5000/app:1", "docker.io/library/app:1"}},
		{name: "additional registries not used for full names", opts: ServiceOptions{AddRegistries: []string{"r1.example.com"}}, in: "quay.io/x/y",
			want: []string{"quay.io/x/y"}},
		{name: "blocked additional is left out", opts: ServiceOptions{AddRegistries: []string{"r1.example.com", "r2.example.com"}, BlockRegistries: []string{"r1.example.com"}}, in: "app",
			want: []string{"r2.example.com/app", "docker.io/library/app"}},
		{name: "block all keeps additional", opts: ServiceOptions{AddRegistries: []string{"r1.example.com"}, BlockRegistries: []string{"all"}}, in: "app",
			want: []string{"r1.example.com/app"}},
		{name: "blocked full name", opts: ServiceOptions{BlockRegistries: []string{"quay.io"}}, in: "quay.io/x/y",
			errIs: errdefs.IsPermissionDenied, errText: "registry quay.io is blocked"},
		{name: "blocked docker.io alone", opts: ServiceOptions{BlockRegistries: []string{"docker.io"}}, in: "busybox",
			errIs: errdefs.IsPermissionDenied, errText: "registry docker.io is blocked"},
		{name: "block all with nothing left", opts: ServiceOptions{BlockRegistries: []string{"all"}}, in: "busybox",
			errIs: errdefs.IsPermissionDenied, errText: "is blocked"},
		{name: "upper case", in: "Busybox", errIs: errdefs.IsInvalidArgument, errText: "invalid reference format"},
		{name: "empty", in: "", errIs: errdefs.IsInvalidArgument, errText: "invalid reference format"},
		{name: "bad digest", in: "busybox@sha256:abc", errIs: errdefs.IsInvalidArgument, errText: "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testService(t, tc.opts)
			got, err := candidatesOf(s, tc.in)
			if tc.errIs != nil {
				if err == nil || !tc.errIs(err) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("Candidates(%q) error = %v, want class and %q", tc.in, err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, n := range got {
				names = append(names, n.String())
			}
			if strings.Join(names, " ") != strings.Join(tc.want, " ") {
				t.Errorf("Candidates(%q) = %v, want %v", tc.in, names, tc.want)
			}
		})
	}
}

func TestNewServiceValidatesOptions(t *testing.T) {
	tests := []struct {
		opts ServiceOptions
		want string // "" = valid
	}{
		{ServiceOptions{InsecureRegistries: []string{"10.0.0.0/8", "myreg:5000", "::1/128"}}, ""},
		{ServiceOptions{InsecureRegistries: []string{"10.0.0.0/33"}}, "not a valid CIDR"},
		{ServiceOptions{InsecureRegistries: []string{"http://myreg"}}, "should not contain '://'"},
		{ServiceOptions{InsecureRegistries: []string{"my reg"}}, "not a valid host"},
		{ServiceOptions{Mirrors: []string{"https://mirror.example.com"}}, ""},
		{ServiceOptions{Mirrors: []string{"ftp://mirror"}}, "unsupported scheme"},
		{ServiceOptions{Mirrors: []string{"https://u:p@mirror"}}, "username/password"},
		{ServiceOptions{Mirrors: []string{"https://mirror/path"}}, "path is not supported"},
		{ServiceOptions{Mirrors: []string{"https://mirror/?q=1"}}, "query or fragment"},
		{ServiceOptions{AddRegistries: []string{""}}, "empty registry host"},
		{ServiceOptions{BlockRegistries: []string{"bad host!"}}, "not a valid host"},
	}
	for _, tc := range tests {
		_, err := NewService(tc.opts)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: unexpected error %v", tc.opts, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errdefs.IsInvalidArgument(err) {
			t.Errorf("%+v: error %v, want InvalidArgument containing %q", tc.opts, err, tc.want)
		}
	}
}

func TestSecureAndInsecureRegistries(t *testing.T) {
	s := testService(t, ServiceOptions{InsecureRegistries: []string{"10.1.0.0/16", "myreg.example.com:5000", "plain.example.com"}})
	tests := []struct {
		host   string
		secure bool
	}{
		{"docker.io", true},
		{"quay.io", true},
		{"127.0.0.1:5000", false},
		{"127.8.9.10", false},
		{"[::1]:5000", false},
		{"localhost:5000", false},
		{"10.1.2.3:443", false},
		{"10.2.0.1", true},
		{"myreg.example.com:5000", false},
		{"myreg.example.com", true},
		{"plain.example.com:8080", false},
	}
	for _, tc := range tests {
		if got := s.config().Secure(tc.host); got != tc.secure {
			t.Errorf("secure(%q) = %v, want %v", tc.host, got, tc.secure)
		}
	}
	sc := s.ServiceConfig()
	want := []netip.Prefix{netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.1.0.0/16")}
	if len(sc.InsecureRegistryCIDRs) != len(want) {
		t.Fatalf("InsecureRegistryCIDRs = %v, want %v", sc.InsecureRegistryCIDRs, want)
	}
	for i := range want {
		if sc.InsecureRegistryCIDRs[i] != want[i] {
			t.Errorf("InsecureRegistryCIDRs[%d] = %v, want %v", i, sc.InsecureRegistryCIDRs[i], want[i])
		}
	}
	if d := sc.IndexConfigs["docker.io"]; d == nil || !d.Secure || !d.Official || d.Mirrors == nil {
		t.Errorf("docker.io index config %+v", d)
	}
	if m := sc.IndexConfigs["myreg.example.com:5000"]; m == nil || m.Secure {
		t.Errorf("insecure host index config %+v", m)
	}
	if sc.Mirrors == nil {
		t.Errorf("Mirrors must be [] not null")
	}
}

func TestRepositoryInfo(t *testing.T) {
	s := testService(t, ServiceOptions{Mirrors: []string{"https://mirror.example.com"}, BlockRegistries: []string{"evil.example.com"}})
	for _, tc := range []struct {
		name     string
		index    string
		official bool
		secure   bool
		mirrors  int
	}{
		{"busybox", "docker.io", true, true, 1},
		{"team/app", "docker.io", false, true, 1},
		{"localhost:5000/app", "localhost:5000", false, false, 0},
		{"quay.io/a/b", "quay.io", false, true, 0},
	} {
		n, _ := reference.ParseNormalizedNamed(tc.name)
		info, err := s.RepositoryInfo(n)
		if err != nil {
			t.Fatal(err)
		}
		if info.Index.Name != tc.index || info.Official != tc.official || info.Index.Secure != tc.secure || len(info.Index.Mirrors) != tc.mirrors {
			t.Errorf("%s: %+v index %+v", tc.name, info, info.Index)
		}
	}
	n, _ := reference.ParseNormalizedNamed("evil.example.com/x")
	if _, err := s.RepositoryInfo(n); !errdefs.IsPermissionDenied(err) {
		t.Errorf("blocked: %v", err)
	}
}

func b64(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }

func TestNormaliseServerAddress(t *testing.T) {
	for in, want := range map[string]string{
		"https://index.docker.io/v1/": "docker.io",
		"index.docker.io":             "docker.io",
		"registry-1.docker.io":        "docker.io",
		"docker.io":                   "docker.io",
		"http://localhost:5000/v2/":   "localhost:5000",
		"Quay.IO":                     "quay.io",
		"":                            "",
	} {
		if got := hosts.NormaliseServerAddress(in); got != want {
			t.Errorf("hosts.NormaliseServerAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

// A timeout that is not a positive duration is the caller's error.
func TestServiceRejectsNegativeTimeout(t *testing.T) {
	if _, err := NewService(ServiceOptions{Timeout: -time.Second}); err == nil || !errdefs.IsInvalidArgument(err) {
		t.Errorf("negative timeout: %v, want InvalidArgument", err)
	}
}

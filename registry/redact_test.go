package registry

import (
	"context"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	registrytypes "github.com/moby/moby/api/types/registry"
)

func TestRedactAddress(t *testing.T) {
	for in, want := range map[string]string{
		"http://user:pw@host:5000":       "http://xxxxx@host:5000",
		"https://user:pw@host/v2/?a=b@c": "https://xxxxx@host/v2/?a=b@c",
		"user:pw@host":                   "xxxxx@host",
		"token@host:5000":                "xxxxx@host:5000",
		"u:p@q@host":                     "xxxxx@host",
		"host:5000":                      "host:5000",
		"https://host/v2/a@b":            "https://host/v2/a@b",
		"":                               "",
	} {
		if got := RedactAddress(in); got != want {
			t.Errorf("RedactAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

// Login refuses a server address with credentials in it, as a client
// error that does not repeat them (in any case: hosts are lowered on their
// way into messages).
func TestLoginNeverRepeatsServerAddressCredentials(t *testing.T) {
	s := testService(t, ServiceOptions{})
	for _, addr := range []string{"http://leaky:S3CRET@127.0.0.1:5000", "leaky:S3CRET@127.0.0.1:5000", "https://S3CRET@r.example/v2/"} {
		_, err := s.Login(context.Background(), &registrytypes.AuthConfig{Username: "u", Password: "p", ServerAddress: addr})
		if err == nil || !errdefs.IsInvalidArgument(err) {
			t.Fatalf("%s: %v, want InvalidArgument", addr, err)
		}
		if low := strings.ToLower(err.Error()); strings.Contains(low, "s3cret") || strings.Contains(low, "leaky") {
			t.Errorf("%s: error repeats the credentials: %v", addr, err)
		}
	}
}

// Settings that name registries: their errors repeat no credentials.
func TestConfigErrorsNeverRepeatCredentials(t *testing.T) {
	for _, opts := range []ServiceOptions{
		{Mirrors: []string{"https://leaky:S3CRET@mirror.example"}},
		{Mirrors: []string{"ftp://leaky:S3CRET@mirror.example"}},
		{Mirrors: []string{"https://leaky:S3CRET@mirror.example/path"}},
		{Mirrors: []string{"https://leaky:S3CRET@[::1/"}},
		{InsecureRegistries: []string{"http://leaky:S3CRET@r.example"}},
		{InsecureRegistries: []string{"leaky:S3CRET@r.example/8"}},
		{AddRegistries: []string{"leaky:S3CRET@r.example"}},
		{BlockRegistries: []string{"leaky:S3CRET@r.example"}},
	} {
		_, err := newConfig(opts)
		if err == nil {
			t.Errorf("%+v accepted", opts)
			continue
		}
		if low := strings.ToLower(err.Error()); strings.Contains(low, "s3cret") || strings.Contains(low, "leaky") {
			t.Errorf("error repeats the credentials: %v", err)
		}
	}
}

package hosts

import (
	"strings"
	"testing"
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

// Settings that name registries: their errors repeat no credentials.
func TestConfigErrorsNeverRepeatCredentials(t *testing.T) {
	for _, opts := range []Options{
		{Mirrors: []string{"https://leaky:S3CRET@mirror.example"}},
		{Mirrors: []string{"ftp://leaky:S3CRET@mirror.example"}},
		{Mirrors: []string{"https://leaky:S3CRET@mirror.example/path"}},
		{Mirrors: []string{"https://leaky:S3CRET@[::1/"}},
		{InsecureRegistries: []string{"http://leaky:S3CRET@r.example"}},
		{InsecureRegistries: []string{"leaky:S3CRET@r.example/8"}},
		{AddRegistries: []string{"leaky:S3CRET@r.example"}},
		{BlockRegistries: []string{"leaky:S3CRET@r.example"}},
	} {
		_, err := New(opts)
		if err == nil {
			t.Errorf("%+v accepted", opts)
			continue
		}
		if low := strings.ToLower(err.Error()); strings.Contains(low, "s3cret") || strings.Contains(low, "leaky") {
			t.Errorf("error repeats the credentials: %v", err)
		}
	}
}

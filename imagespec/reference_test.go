package imagespec

import "testing"

func TestFormatReference(t *testing.T) {
	const d = "sha256:1711d7ca6d3a40f0cb6e700f48785e8b0dac280d1aea16c29eb30739e36b28a6"
	for _, tc := range []struct{ name, tag, digest, want string }{
		{"alpine", "", "", "alpine"},
		{"alpine", "3.20", "", "alpine:3.20"},
		{"localhost:5000/a/b", "", d, "localhost:5000/a/b@" + d},
		{"docker.io/library/alpine", "3.20", d, "docker.io/library/alpine:3.20@" + d},
		{"", "1.0", "", ":1.0"},
	} {
		if got := FormatReference(tc.name, tc.tag, tc.digest); got != tc.want {
			t.Errorf("FormatReference(%q, %q, %q) = %q, want %q", tc.name, tc.tag, tc.digest, got, tc.want)
		}
	}
}

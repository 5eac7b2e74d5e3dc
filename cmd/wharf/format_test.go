package main

import (
	"testing"
	"time"
)

var testNow = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func TestAPITimestamp(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"1796283967", "1796283967"},
		{"1796283967.5", "1796283967.5"},
		{"10m", "1796299200.000000000"},
		{"2026-12-03T12:00:00Z", "1796299200.000000000"},
	}
	now := testNow.Add(10 * time.Minute)
	for _, tt := range tests {
		got, err := apiTimestamp(tt.in, now)
		if err != nil || got != tt.want {
			t.Errorf("apiTimestamp(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := apiTimestamp("yesterday", now); err == nil {
		t.Error("garbage accepted")
	}
}

func TestParsePlatform(t *testing.T) {
	// Normalised as containerd does: arm64/v8 is arm64.
	p, err := parsePlatform("linux/ARM64/v8")
	if err != nil || p.OS != "linux" || p.Architecture != "arm64" || p.Variant != "" {
		t.Errorf("%+v %v", p, err)
	}
	for _, bad := range []string{"linux", "linux/", "/amd64", "a/b/c/d"} {
		if _, err := parsePlatform(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

package main

import (
	"strings"
	"testing"
	"time"
)

// FuzzParsePlatform: no panics; an accepted platform has an OS and an architecture.
func FuzzParsePlatform(f *testing.F) {
	for _, s := range []string{"linux/amd64", "linux/arm64/v8", "linux", "a/b/c/d", "", "//", "Windows/AMD64"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePlatform(s)
		if err != nil || p == nil {
			return
		}
		if p.OS == "" || p.Architecture == "" || strings.Contains(p.OS+p.Architecture+p.Variant, "/") {
			t.Fatalf("parsePlatform(%q) = %+v", s, p)
		}
	})
}

// FuzzAPITimestamp: no panics on any --since/--until value.
func FuzzAPITimestamp(f *testing.F) {
	for _, s := range []string{"10m", "1796283967", "1796283967.123", "2026-12-03", "2026-12-03T12:00:00Z", "-1h", "x", "9999999999999h"} {
		f.Add(s)
	}
	now := time.Unix(1796299200, 0)
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = apiTimestamp(s, now)
	})
}

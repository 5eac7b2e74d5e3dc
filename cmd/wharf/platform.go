package main

import (
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/imagespec"
)

// parsePlatforms parses each --platform value (parsePlatform).
func parsePlatforms(vs []string) ([]ocispec.Platform, error) {
	var out []ocispec.Platform
	for _, v := range vs {
		p, err := parsePlatform(v)
		if err != nil {
			return nil, err
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	return out, nil
}

// parsePlatform parses "os/arch[/variant]" (the --platform flag) with
// wharf's one platform parser; "" is nil.
func parsePlatform(s string) (*ocispec.Platform, error) {
	if s == "" {
		return nil, nil
	}
	// The flag names both halves, as docker's documentation writes it: a
	// lone "linux" would silently mean this machine's architecture.
	if !strings.Contains(s, "/") {
		return nil, fmt.Errorf("invalid platform %q: want os/arch[/variant]", s)
	}
	p, err := imagespec.ParsePlatform(s)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

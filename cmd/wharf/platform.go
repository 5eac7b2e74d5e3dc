package main

import (
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// parsePlatform parses "os/arch[/variant]" (the --platform flag); "" is nil.
func parsePlatform(s string) (*ocispec.Platform, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(strings.ToLower(s), "/")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, fmt.Errorf("invalid platform %q: want os/arch[/variant]", s)
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("invalid platform %q: want os/arch[/variant]", s)
		}
	}
	p := &ocispec.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

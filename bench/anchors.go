//go:build bench

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The anchors: other tools the bench runs beside wharfd in the same run, so
// that a figure is a ratio to what a user would otherwise reach for. They are
// installed by the bench itself on first use: crane from the Go module proxy
// (the go-containerregistry version go.mod already pins, so the bench adds no
// dependency), skopeo from Debian's packages.

// craneVersion is go.mod's go-containerregistry version.
const craneVersion = "v0.22.1"

// craneBin returns the path of crane, building it into .cache/bin once.
func craneBin(ctx context.Context, root string) (string, error) {
	dir := filepath.Join(root, ".cache", "bin")
	bin := filepath.Join(dir, "crane")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// `go install pkg@version` builds outside our module: our GOFLAGS
	// (-mod=readonly) must not apply to it.
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/google/go-containerregistry/cmd/crane@"+craneVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("installing crane %s: %w: %s", craneVersion, err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// skopeoBin returns the path of skopeo, installing Debian's package when it
// is missing (as .ci/run does for the skopeo suite).
func skopeoBin(ctx context.Context) (string, error) {
	if p, err := exec.LookPath("skopeo"); err == nil {
		return p, nil
	}
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", "--no-install-recommends", "skopeo"}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return exec.LookPath("skopeo")
}

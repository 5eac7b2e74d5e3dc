// Package testregistry starts the real CNCF distribution registry (and a small
// token server) for wharf's end-to-end tests, counts the requests that reach
// them, and puts images into them with plain HTTP so that fixtures never
// depend on the code under test.
package testregistry

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gofrs/flock"
)

// RegistryPackage is the registry the suites run, at the version
// tools/go.mod pins: the Makefile builds the same into .cache/bin.
const RegistryPackage = "github.com/distribution/distribution/v3/cmd/registry"

// Fataler is what the helpers need from a test: *testing.T and *check.C both
// have it.
type Fataler interface {
	Fatalf(format string, args ...any)
}

// RepoRoot returns the wharf module root, found from this source file so that
// it does not depend on the test's working directory.
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testregistry: cannot locate source file")
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("testregistry: no go.mod at %s: %w", root, err)
	}
	return root, nil
}

// Binary returns the path of the registry binary, building it when missing.
func Binary(t Fataler) string {
	p, err := BuildBinary()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return p
}

// RegistryBinEnv names a prebuilt registry binary (the Makefile sets it).
const RegistryBinEnv = "WHARF_REGISTRY_BIN"

// BuildBinary returns $WHARF_REGISTRY_BIN when set, else
// <root>/.cache/bin/registry, building it in tools/ when it is missing. A
// file lock keeps parallel test packages from building it twice at once (go
// build writes the binary in place).
func BuildBinary() (string, error) {
	if p := os.Getenv(RegistryBinEnv); p != "" {
		if !isExecutable(p) {
			return "", fmt.Errorf("testregistry: %s=%s is not an executable file", RegistryBinEnv, p)
		}
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, ".cache", "bin")
	path := filepath.Join(bin, "registry")
	if isExecutable(path) {
		return path, nil
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", fmt.Errorf("testregistry: %w", err)
	}
	lock := flock.New(filepath.Join(bin, ".registry.lock"))
	if err := lock.Lock(); err != nil {
		return "", fmt.Errorf("testregistry: lock %s: %w", lock.Path(), err)
	}
	defer lock.Unlock()
	if isExecutable(path) { // another package built it while we waited
		return path, nil
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin+string(filepath.Separator), RegistryPackage)
	// tools/ is its own module (tools/go.mod pins the version); go.sum
	// there checks every download.
	cmd.Dir = filepath.Join(root, "tools")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testregistry: go build %s: %w\n%s", RegistryPackage, err, out)
	}
	if !isExecutable(path) {
		return "", fmt.Errorf("testregistry: go build did not produce %s", path)
	}
	return path, nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// StartForTest starts the real registry for a unit test, or skips the
// test when the binary is not built (make test builds it) or with -short.
// The registry stops when the test ends.
func StartForTest(t testing.TB, opts Options) *Registry {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a registry")
	}
	bin := os.Getenv(RegistryBinEnv)
	if bin == "" {
		root, err := RepoRoot()
		if err != nil {
			t.Skip(err)
		}
		bin = filepath.Join(root, ".cache", "bin", "registry")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("registry binary not built: %v", err)
	}
	reg, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	return reg
}

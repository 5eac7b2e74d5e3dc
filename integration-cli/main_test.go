package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// Hook check.v1 into go test.
func Test(t *testing.T) { check.TestingT(t) }

// binaries are the wharfd and wharf under test, built once per run.
type binaries struct {
	Wharfd string
	Wharf  string
	// Err is why they are missing; suites that need them fail with it.
	Err error
}

var bins binaries

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "wharf-it-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bins = buildBinaries(tmp)
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// buildBinaries returns $WHARF_BIN_DIR/{wharfd,wharf} when set (the Makefile
// points it at bin/), else builds both into dir.
func buildBinaries(dir string) binaries {
	if d := os.Getenv("WHARF_BIN_DIR"); d != "" {
		b := binaries{Wharfd: filepath.Join(d, "wharfd"), Wharf: filepath.Join(d, "wharf")}
		for _, p := range []string{b.Wharfd, b.Wharf} {
			if _, err := os.Stat(p); err != nil {
				b.Err = fmt.Errorf("WHARF_BIN_DIR=%s: %w", d, err)
			}
		}
		return b
	}
	root, err := testregistry.RepoRoot()
	if err != nil {
		return binaries{Err: err}
	}
	b := binaries{Wharfd: filepath.Join(dir, "wharfd"), Wharf: filepath.Join(dir, "wharf")}
	for _, p := range []struct{ out, pkg string }{{b.Wharfd, "./cmd/wharfd"}, {b.Wharf, "./cmd/wharf"}} {
		cmd := exec.Command("go", "build", "-o", p.out, p.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Err = fmt.Errorf("go build %s: %w\n%s", p.pkg, err, out)
			fmt.Fprintf(os.Stderr, "integration-cli: %v\n", b.Err)
			return b
		}
	}
	return b
}

// needBinaries fails the suite when wharfd or wharf could not be built.
func needBinaries(c *check.C) {
	if bins.Err != nil {
		c.Fatalf("wharf binaries unavailable: %v", bins.Err)
	}
}

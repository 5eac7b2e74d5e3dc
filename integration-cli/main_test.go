package integration

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// runSuite runs one check.v1 suite as its own go test, so that
// `go test -run TestAPISuite` picks it and suites that share nothing run in
// parallel. The check.* flags (-check.f, -check.v, -check.vv, -check.list,
// -check.work, -check.b) keep their meaning. Its summary ("OK: N passed")
// is printed as check.TestingT prints the whole run's.
func runSuite(t *testing.T, suite any) {
	conf := checkConf()
	name := strings.TrimPrefix(t.Name(), "Test") // SDKSuite141: the suite and its variant
	if flagOn("check.list") || flagOn("gocheck.list") {
		for _, n := range check.List(suite, conf) {
			fmt.Println(n)
		}
		return
	}
	res := check.Run(suite, conf)
	if res.RunError == nil && res.Succeeded+res.Skipped+res.Failed+res.Panicked+
		res.FixturePanicked+res.ExpectedFailures+res.Missed == 0 {
		t.Skipf("no test of %s matches -check.f %q", name, conf.Filter)
	}
	fmt.Printf("%s: %s\n", name, res)
	if res.WorkDir != "" {
		fmt.Printf("%s: WORK=%s\n", name, res.WorkDir)
	}
	if !res.Passed() {
		t.Fail()
	}
}

// checkConf is the run configuration check.TestingT builds from the
// check.* flags (and their gocheck.* aliases), built afresh for each suite.
func checkConf() *check.RunConf {
	btime, err := time.ParseDuration(flagValue("check.btime"))
	if err != nil || btime == time.Second {
		btime, _ = time.ParseDuration(flagValue("gocheck.btime"))
	}
	return &check.RunConf{
		Filter:        flagValue("gocheck.f") + flagValue("check.f"),
		Verbose:       flagOn("gocheck.v") || flagOn("check.v"),
		Stream:        flagOn("gocheck.vv") || flagOn("check.vv"),
		Benchmark:     flagOn("gocheck.b") || flagOn("check.b"),
		BenchmarkTime: btime,
		BenchmarkMem:  flagOn("check.bmem"),
		KeepWorkDir:   flagOn("gocheck.work") || flagOn("check.work"),
	}
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

func flagOn(name string) bool { return flagValue(name) == "true" }

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
	flag.Parse()
	logs := startLogCollection()
	code := m.Run()
	if logs != nil && !logs.searchAll() && code == 0 {
		code = 1
	}
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

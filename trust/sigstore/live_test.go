package sigstore

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRealCosign regenerates the fixtures with the real cosign and registry
// (testdata/gen.sh, into a temp dir) and runs the whole table over
// them: the committed fixtures cannot drift from what cosign writes today.
// `make test` builds the binaries (make cosign registry); without them, or
// with -short, it skips.
func TestRealCosign(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running cosign")
	}
	bin, err := filepath.Abs("../../.cache/bin")
	if err != nil {
		t.Fatal(err)
	}
	env := os.Environ()
	for _, b := range []struct{ env, name string }{{"COSIGN", "cosign"}, {"REGISTRY", "registry"}} {
		p := os.Getenv(b.env)
		if p == "" {
			p = filepath.Join(bin, b.name)
		}
		if _, err := os.Stat(p); err != nil {
			t.Skipf("no %s at %s (make cosign registry)", b.name, p)
		}
		env = append(env, b.env+"="+p)
	}
	out := t.TempDir()
	cmd := exec.Command("testdata/gen.sh", out)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.sh: %v\n%s", err, b)
	} else {
		t.Logf("%s", b)
	}
	runAll(t, loadFixtures(t, out))
}

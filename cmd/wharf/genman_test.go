//go:build gendocs

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const genManBuilt = true

func TestGenMan(t *testing.T) {
	dir := t.TempDir()
	if res := runCLI(t, testEnv(t), "", "gen-man", filepath.Join(dir, "man")); res.code != 0 {
		t.Fatalf("gen-man: %d %s", res.code, res.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "man", "wharf-inspect.1"))
	if err != nil || !strings.Contains(string(b), "remote") {
		t.Errorf("wharf-inspect.1: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "man", "wharf-gen-man.1")); err == nil {
		t.Error("hidden command got a man page")
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBadConfigStopsStartupWithClearMessage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file string
		args       []string
		want       string
	}{
		{"unknown key", `{"storage-driver":"overlay2"}`, nil, "the following directives don't match any configuration option: storage-driver"},
		{"bad value", `{"debug":"yes"}`, nil, `invalid value for "debug"`},
		{"flag and file", `{"debug":true}`, []string{"-D"}, "the following directives are specified both as a flag and in the configuration file: debug"},
		{"tcp without the insecure flag", `{}`, []string{"-H", "tcp://127.0.0.1:0", "--data-root", filepath.Join(dir, "root")}, "--allow-insecure-tcp"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "daemon"+string(rune('a'+i))+".json")
			if err := os.WriteFile(p, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := newCommand()
			cmd.SetArgs(append([]string{"--config-file", p}, tc.args...))
			cmd.SetOut(&bytes.Buffer{})
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestVersionFlag(t *testing.T) {
	cmd := newCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version"})
	if err := cmd.Execute(); err != nil || !strings.HasPrefix(out.String(), "wharfd version ") {
		t.Fatalf("%q %v", out.String(), err)
	}
}

// The version make stamps with -X main.version (git describe; what `make
// deb` packages) is what --version prints, before any configuration is read.
func TestVersionFlagPrintsStampedVersion(t *testing.T) {
	oldV, oldC := version, gitCommit
	defer func() { version, gitCommit = oldV, oldC }()
	version, gitCommit = "1.2.3-4-gabc1234-dirty", "abc1234"
	cmd := newCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version", "--config-file", filepath.Join(t.TempDir(), "missing.json")})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "wharfd version 1.2.3-4-gabc1234-dirty, build abc1234\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

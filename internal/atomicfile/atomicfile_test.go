package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile replaces the content whole, with the mode asked, leaves no
// temp file, and never writes through a symlink planted at the temp name.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, p+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{p: "two", victim: "untouched"} {
		b, err := os.ReadFile(path)
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", path, b, err, want)
		}
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	if _, err := os.Lstat(p + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temp file left: %v", err)
	}
}

// A write that cannot rename (the target is a directory) fails and
// leaves no temp file.
func TestWriteFileFailureLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("x"), 0o600); err == nil {
		t.Fatal("renamed over a non-empty directory")
	}
	if _, err := os.Lstat(p + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temp file left: %v", err)
	}
}

package packages

import (
	"io/fs"
	"os"
	"testing"
)

// Wanted keeps what the catalogers read next: databases and os-release
// by their paths, executables only when they are Go binaries.
func TestWanted(t *testing.T) {
	self, err := os.ReadFile(os.Args[0]) // a Go test binary: ELF with build info
	if err != nil {
		t.Fatal(err)
	}
	elf := append([]byte("\x7fELF"), make([]byte, 60)...)
	for _, tc := range []struct {
		path       string
		mode       fs.FileMode
		data       []byte
		file, keep bool
	}{
		{"/var/lib/dpkg/status", 0o644, []byte("Package: a\n"), true, true},
		{"/var/lib/dpkg/status.d/base", 0o644, []byte("Package: a\n"), true, true},
		{"/lib/apk/db/installed", 0o644, []byte("P:a\n"), true, true},
		{"/var/lib/rpm/rpmdb.sqlite", 0o644, []byte("SQLite"), true, true},
		{"/etc/os-release", 0o644, []byte("ID=x\n"), true, true},
		{"/usr/lib/os-release", 0o644, []byte("ID=x\n"), true, true},
		{"/usr/bin/prog", 0o755, self, true, true},
		{"/usr/bin/c-prog", 0o755, elf, true, false},
		{"/usr/bin/script", 0o755, []byte("#!/bin/sh\n"), true, false},
		{"/etc/passwd", 0o644, []byte("root:x:0:0\n"), false, false},
		{"/usr/bin/tiny", 0o755, []byte("ab"), false, false},
	} {
		if got := Wanted.File(tc.path, tc.mode, int64(len(tc.data))); got != tc.file {
			t.Errorf("File(%s) = %v, want %v", tc.path, got, tc.file)
		}
		if !tc.file {
			continue
		}
		if got := Wanted.Keep(tc.path, tc.mode, tc.data); got != tc.keep {
			t.Errorf("Keep(%s) = %v, want %v", tc.path, got, tc.keep)
		}
	}
}

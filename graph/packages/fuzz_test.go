package packages

import "testing"

func FuzzParseDpkgStatus(f *testing.F) {
	f.Add([]byte(dpkgStatus))
	f.Add([]byte("Package: a\nSource: s (1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, e := range ParseDpkgStatus(b) {
			if e.Package == "" {
				t.Fatal("an entry without a package")
			}
		}
	})
}

func FuzzParseApkInstalled(f *testing.F) {
	f.Add([]byte("P:musl\nV:1.2.5-r0\nA:x86_64\no:musl\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) { _ = ParseApkInstalled(b) })
}

func FuzzParseOSRelease(f *testing.F) {
	f.Add([]byte(debianRelease))
	f.Add([]byte("ID=\"a\\\"b\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) { _ = ParseOSRelease(b) })
}

func FuzzFromStatement(f *testing.F) {
	f.Add([]byte(spdxStatement))
	f.Add([]byte(cdxStatement))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := FromStatement(b, 100)
		if err == nil && len(ps) > 100 {
			t.Fatal("past the cap")
		}
	})
}

package imagespec

import (
	"regexp"
	"strings"
	"testing"

	"github.com/distribution/reference"
)

// The grammar's own regexp is the oracle.
var tagOracle = regexp.MustCompile(`^` + reference.TagRegexp.String() + `$`)

func TestValidTagIsTheGrammar(t *testing.T) {
	for _, s := range []string{"", "1.0", "latest", "_x", ".x", "-x", "a-b.c_d", "ü", "a b", "a/b", "a:b",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "x.sbom", "sha256-abc"} {
		if got, want := ValidTag(s), tagOracle.MatchString(s); got != want {
			t.Errorf("ValidTag(%q) = %v, the grammar says %v", s, got, want)
		}
	}
}

func FuzzValidTag(f *testing.F) {
	for _, s := range []string{"1.0", ".x", strings.Repeat("a", 129), "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidTag(s), tagOracle.MatchString(s); got != want {
			t.Fatalf("ValidTag(%q) = %v, the grammar says %v", s, got, want)
		}
	})
}

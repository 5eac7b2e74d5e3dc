package graph

import (
	"strings"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

// FuzzParseNewTag feeds client-supplied names to tag creation (repo,
// tag) and to graph's lookup. Nothing may panic; an accepted tag must print
// as a reference that parses back to itself; errors are classified (a 400
// or 404, never a 500). (graph/store's FuzzReferenceParsing covers the
// store's normalisation and lookup.)
func FuzzParseNewTag(f *testing.F) {
	for _, seed := range [][2]string{
		{"busybox", "latest"}, {"docker.io/library/busybox:1.36", ""}, {"localhost:5000/a/b", "v1"},
		{"UPPER", "x"}, {"a::b", ""}, {"sha256", "x"}, {"a@sha256:" + strings.Repeat("0", 64), ""},
		{"sha256:" + strings.Repeat("a", 64), ""}, {"[::1]:5000/x", "t"}, {strings.Repeat("a/", 200) + "b", ""},
		{"a", strings.Repeat("t", 129)}, {"", ""}, {"a\x00b", ""}, {"ex.com/a_b__c", "-x"},
	} {
		f.Add(seed[0], seed[1])
	}
	s, _ := newLocalTestStore(f)
	graphtest.ImportImage(f, s, "fuzz/ref:1", "fuzz")
	f.Fuzz(func(t *testing.T, repo, tag string) {
		if ref, err := store.ParseNewTag(repo, tag); err == nil {
			again, err := store.ParseNewTag(ref.String(), "")
			if err != nil || again.String() != ref.String() {
				t.Fatalf("store.ParseNewTag(%q, %q) = %s, which reparses as %v, %v", repo, tag, ref, again, err)
			}
			if n, err := store.NormaliseRefs([]string{ref.String()}, false); err != nil || n[0] != ref.String() {
				t.Fatalf("the store normalises the tag %s as %v, %v", ref, n, err)
			}
		} else if !errdefs.IsInvalidArgument(err) {
			t.Fatalf("store.ParseNewTag(%q, %q): unclassified error %v", repo, tag, err)
		}
		if _, err := s.images.Lookup(repo); err != nil && !errdefs.IsNotFound(err) && !errdefs.IsInvalidArgument(err) {
			t.Fatalf("Lookup(%q): unclassified error %v", repo, err)
		}
	})
}

package layerindex

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// BuildWith keeps the bytes of the files Want picks and Check passes,
// within Max in all, each by its entry's header offset, and names those
// Check declined; the index is the one Build gives.
func TestBuildWithKeeps(t *testing.T) {
	raw := tarOf(t, dir("etc"), file("etc/a", "alpha"), file("etc/b", "bravo!"), file("etc/c", "charlie"), file("etc/d", "delta"), symlink("etc/l", "a"))
	want := func(e *Entry) bool { return e.Path != "/etc/d" }
	for _, tc := range []struct {
		name     string
		keep     Keep
		kept     []string
		paths    []string
		declined []string
	}{
		{"nothing wanted", Keep{Max: 1 << 20}, nil, nil, nil},
		{"all but d", Keep{Want: want, Max: 1 << 20}, []string{"alpha", "bravo!", "charlie"}, []string{"/etc/a", "/etc/b", "/etc/c"}, nil},
		{"checked", Keep{Want: want, Max: 1 << 20, Check: func(_ *Entry, b []byte) bool { return b[0] != 'b' }}, []string{"alpha", "charlie"}, []string{"/etc/a", "/etc/c"}, []string{"/etc/b"}},
		// 5 + 6 fit in 12; charlie (7) does not, and nothing after it is
		// larger than what is left.
		{"within Max", Keep{Want: want, Max: 12}, []string{"alpha", "bravo!"}, []string{"/etc/a", "/etc/b"}, nil},
		{"Max 0", Keep{Want: want}, nil, nil, nil},
	} {
		ix, kept, err := BuildWith(context.Background(), bytes.NewReader(raw), Limits{}, Options{Keep: tc.keep})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		plain, err := Build(context.Background(), bytes.NewReader(raw), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ix.Entries) != len(plain.Entries) || ix.DiffID != plain.DiffID {
			t.Fatalf("%s: the index differs from Build's", tc.name)
		}
		var declined []string
		var held []Kept
		for _, k := range kept {
			if k.Declined {
				if k.Data != nil {
					t.Fatalf("%s: a declined file's bytes are kept", tc.name)
				}
				declined = append(declined, pathAt(ix, k.HeaderOffset))
				continue
			}
			held = append(held, k)
		}
		if strings.Join(declined, ",") != strings.Join(tc.declined, ",") {
			t.Fatalf("%s: declined %v, want %v", tc.name, declined, tc.declined)
		}
		if len(held) != len(tc.kept) {
			t.Fatalf("%s: kept %d files, want %d", tc.name, len(held), len(tc.kept))
		}
		for i, k := range held {
			if pathAt(ix, k.HeaderOffset) != tc.paths[i] || string(k.Data) != tc.kept[i] {
				t.Fatalf("%s: kept %d is %q at %d, want %s = %q", tc.name, i, k.Data, k.HeaderOffset, tc.paths[i], tc.kept[i])
			}
		}
	}
}

// pathAt is the path of the entry whose header is at off.
func pathAt(ix *Index, off int64) string {
	for j := range ix.Entries {
		if ix.Entries[j].HeaderOffset == off {
			return ix.Entries[j].Path
		}
	}
	return ""
}

// Entry.Digest is the digest go-digest gives the same bytes.
func TestEntryDigestIsGoDigests(t *testing.T) {
	e := Entry{HasDigest: true}
	for i := range e.SHA256 {
		e.SHA256[i] = byte(i * 7)
	}
	if got, want := e.Digest(), digest.NewDigestFromBytes(digest.SHA256, e.SHA256[:]); got != want || got.Validate() != nil {
		t.Fatalf("Digest() = %s, want %s", got, want)
	}
	if (&Entry{}).Digest() != "" {
		t.Fatal("an entry without a digest has one")
	}
}

// A DiffID the caller knows is the index's, the stream not hashed again.
func TestBuildWithKnownDiffID(t *testing.T) {
	raw := tarOf(t, dir("etc"), file("etc/a", "alpha"))
	plain, err := Build(context.Background(), bytes.NewReader(raw), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	known := digest.FromBytes(raw)
	ix, _, err := BuildWith(context.Background(), bytes.NewReader(raw), Limits{}, Options{DiffID: known})
	if err != nil {
		t.Fatal(err)
	}
	if plain.DiffID != known || ix.DiffID != known || ix.TarSize != plain.TarSize || len(ix.Entries) != len(plain.Entries) {
		t.Fatalf("known DiffID: %s %d %d; Build's: %s %d %d", ix.DiffID, ix.TarSize, len(ix.Entries), plain.DiffID, plain.TarSize, len(plain.Entries))
	}
}

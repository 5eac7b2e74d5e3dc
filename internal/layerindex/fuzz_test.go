package layerindex

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// fuzzLimits keep one fuzz input cheap.
var fuzzLimits = Limits{MaxEntries: 2000, MaxIndexBytes: 1 << 20, MaxSparseBytes: 1 << 20, MaxViewNodes: 20000}

// FuzzDecode: no input panics the decoder or makes it exceed its limits,
// and whatever it accepts encodes back to an index it decodes the same.
// Each input is decoded as it is and with its checksum fixed, so the
// fuzzer reaches the parser behind the checksum.
func FuzzDecode(f *testing.F) {
	f.Add(encode(f, sampleIndex(f)))
	f.Add(encode(f, &Index{Source: SourceStream}))
	f.Add([]byte(codecMagic + "\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeAndCheck(t, b)
		if len(b) >= 4 {
			decodeAndCheck(t, reseal(b))
		}
	})
}

func decodeAndCheck(t *testing.T, b []byte) {
	ix, err := Decode(bytes.NewReader(b), fuzzLimits)
	if err != nil {
		return
	}
	if len(ix.Entries) > fuzzLimits.MaxEntries {
		t.Fatalf("%d entries over the cap", len(ix.Entries))
	}
	again, err := Decode(bytes.NewReader(encode(t, ix)), fuzzLimits)
	if err != nil {
		t.Fatalf("re-encoding does not decode: %v", err)
	}
	if !reflect.DeepEqual(again, ix) {
		t.Fatalf("re-encoding differs")
	}
	exercise(t, ix)
}

// FuzzBuild: no byte stream panics Build, every path it keeps is clean,
// and the index merges, lists and resolves without panicking.
func FuzzBuild(f *testing.F) {
	f.Add(tarOf(f, dir("a/"), file("a/b", "x"), symlink("l", "../../a"), hardlink("h", "a/b"), whiteout("a/.wh.c")))
	f.Add(tarOf(f, dir("a/"), whiteout("a/.wh..wh..opq"), symlink("a/loop", "loop"), file("a/loop/x", "")))
	f.Add(testregistry.SparseTarEntry("s", 4096, []byte("data")))
	f.Add(tarOf(f, file("../escape", "")))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := Build(context.Background(), bytes.NewReader(b), fuzzLimits)
		if err != nil {
			return
		}
		for _, e := range ix.Entries {
			if !isClean(e.Path) || !e.Type.Valid() || !modeMatches(e.Type, e.Mode) {
				t.Fatalf("Build kept %+v", e)
			}
			if e.HeaderOffset < 0 || e.DataOffset < e.HeaderOffset || e.DataOffset > int64(len(b)) {
				t.Fatalf("%s: offsets %d %d outside the %d-byte stream", e.Path, e.HeaderOffset, e.DataOffset, len(b))
			}
		}
		got, err := Decode(bytes.NewReader(encode(t, ix)), fuzzLimits)
		if err != nil || !reflect.DeepEqual(got, ix) {
			t.Fatalf("round trip: %v", err)
		}
		exercise(t, ix)
	})
}

// FuzzMerge: two arbitrary layers merge (or are refused) without a panic,
// within the view's caps, and every listed path resolves to itself.
func FuzzMerge(f *testing.F) {
	f.Add(tarOf(f, dir("a/"), file("a/x", "1"), symlink("l", "a")), tarOf(f, whiteout("a/.wh.x"), file("l/y", "2"), hardlink("h", "a/y")))
	f.Add(tarOf(f, file("f", "1")), tarOf(f, dir("f/"), whiteout(".wh..wh..opq"), symlink("f/s", "/../f")))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var ixs []*Index
		for _, raw := range [][]byte{a, b} {
			ix, err := Build(context.Background(), bytes.NewReader(raw), fuzzLimits)
			if err != nil {
				return
			}
			ixs = append(ixs, ix)
		}
		v, err := Merge(context.Background(), ixs, fuzzLimits)
		if err != nil {
			return
		}
		v.List(context.Background(), "/", true, func(it Item) error {
			if p, err := v.Resolve(it.Path, false); err != nil || p != it.Path {
				t.Fatalf("listed %q resolves to %q, %v", it.Path, p, err)
			}
			return nil
		})
	})
}

// exercise merges ix twice over (its whiteouts then hide something) and
// walks every path it names.
func exercise(t *testing.T, ix *Index) {
	v, err := Merge(context.Background(), []*Index{ix, ix}, fuzzLimits)
	if err != nil {
		return
	}
	n := 0
	v.List(context.Background(), "/", true, func(it Item) error {
		n++
		if !isClean(it.Path) {
			t.Fatalf("view lists %q", it.Path)
		}
		return nil
	})
	if n > fuzzLimits.MaxViewNodes {
		t.Fatalf("%d items over the cap", n)
	}
	for _, e := range ix.Entries {
		for _, p := range []string{e.Path, e.Linkname, e.Path + "/"} {
			if r, err := v.Resolve(p, true); err == nil && !isClean(r) {
				t.Fatalf("Resolve(%q) = %q", p, r)
			}
			v.Lstat(p)
		}
	}
	ListLayer(ix, "/", true)
}

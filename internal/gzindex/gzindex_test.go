package gzindex

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os/exec"
	"strings"
	"testing"
)

func gz(t testing.TB, data []byte, level int) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Name = "layer.tar" // a header with a name, as gzip(1) writes
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func text(n int, seed int64) []byte {
	rnd := rand.New(rand.NewSource(seed))
	words := strings.Fields("usr lib bin etc share locale x86_64-linux-gnu libc.so.6 python3 site-packages __init__.py README LICENSE the of and a to in is")
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[rnd.Intn(len(words))])
		b.WriteByte(" /\n"[rnd.Intn(3)])
	}
	return b.Bytes()[:n]
}

func random(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

type blob struct {
	name string
	z    []byte
}

// blobs is the property tests' corpus: incompressible data, text, zeros,
// stored blocks, multi-member with an empty member, and gzip(1)'s
// output when it is installed.
func blobs(t testing.TB) []blob {
	// Sizes are a few blocks each (deflate blocks are ~16–64 KiB): enough
	// for checkpoints at every span tried below, small enough for -race.
	txt, rnd := text(512<<10, 1), random(256<<10, 2)
	multi := append(append(append(gz(t, txt[:256<<10], 1), gz(t, nil, 6)...), gz(t, rnd[:100<<10], 9)...), gz(t, txt[256<<10:], 6)...)
	bs := []blob{
		{"random", gz(t, rnd, 6)},
		{"text", gz(t, txt, 6)},
		{"text-best", gz(t, txt, 9)},
		{"zeros", gz(t, make([]byte, 512<<10), 6)},
		{"stored", gz(t, txt[:200<<10], gzip.NoCompression)},
		{"huffman-only", gz(t, txt[:150<<10], gzip.HuffmanOnly)},
		{"multi-member", multi},
		{"empty", gz(t, nil, 6)},
		{"one-byte", gz(t, []byte{'x'}, 6)},
	}
	if _, err := exec.LookPath("gzip"); err == nil {
		// gzip(1) ends a member with a block of data, not an empty one as
		// compress/gzip does: the next member's header is a checkpoint.
		members := append(gzip1(t, "-9", txt[:256<<10]), gzip1(t, "-1", rnd[:64<<10])...)
		bs = append(bs, blob{"gzip-9", gzip1(t, "-9", txt)}, blob{"gzip-members", members})
	}
	return bs
}

func gzip1(t testing.TB, level string, data []byte) []byte {
	cmd := exec.Command("gzip", level, "-c")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gunzip is the oracle: compress/gzip, multi-member as it reads it.
func gunzip(t testing.TB, z []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ranges serves a blob as a registry serves Range requests, and counts
// them.
type ranges struct {
	b     []byte
	calls int
	asked int64
}

func (r *ranges) ReadRange(_ context.Context, off, n int64) (io.ReadCloser, error) {
	r.calls++
	r.asked += n
	if off < 0 || n < 0 || off+n > int64(len(r.b)) {
		return nil, fmt.Errorf("range %d+%d outside %d bytes", off, n, len(r.b))
	}
	return io.NopCloser(bytes.NewReader(r.b[off : off+n])), nil
}

func build(t testing.TB, z []byte, opts ...Option) (*Index, []byte) {
	t.Helper()
	r := NewReader(bytes.NewReader(z), opts...)
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	ix, err := r.Index()
	if err != nil {
		t.Fatal(err)
	}
	return ix, out
}

// TestRandomReadsEqualGunzip: for every blob and span, the build's output
// is compress/gzip's; the index validates and survives its encoding; and
// reads at random offsets, each through one range request from the
// nearest checkpoint, equal the same bytes of the plain gunzip.
func TestRandomReadsEqualGunzip(t *testing.T) {
	rnd := rand.New(rand.NewSource(3))
	for _, b := range blobs(t) {
		want := gunzip(t, b.z)
		for _, span := range []int64{1, 1000, 64 << 10, 1 << 20, DefaultSpan} {
			t.Run(fmt.Sprintf("%s/span=%d", b.name, span), func(t *testing.T) {
				ix, out := build(t, b.z, WithSpan(span))
				if !bytes.Equal(out, want) {
					t.Fatalf("the build's output differs from gunzip's (%d vs %d bytes)", len(out), len(want))
				}
				if b.name == "gzip-members" && span == 1 && !ix.Checkpoints[len(ix.Checkpoints)-1].Header && !hasHeaderAfterStart(ix) {
					t.Fatal("the second member's header is not a checkpoint")
				}
				if ix.CompressedSize != int64(len(b.z)) || ix.UncompressedSize != int64(len(want)) {
					t.Fatalf("sizes %d/%d, want %d/%d", ix.CompressedSize, ix.UncompressedSize, len(b.z), len(want))
				}
				enc, err := ix.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				ix2, err := Unmarshal(enc)
				if err != nil {
					t.Fatalf("unmarshal: %v", err)
				}
				enc2, _ := ix2.MarshalBinary()
				if !bytes.Equal(enc, enc2) {
					t.Fatal("the encoding does not round-trip")
				}
				for i := 0; i < 6; i++ {
					off := rnd.Int63n(int64(len(want)) + 1)
					n := min(rnd.Int63n(200<<10), int64(len(want))-off)
					rr := &ranges{b: b.z}
					r, err := ix2.ReadAt(context.Background(), rr, off, n)
					if err != nil {
						t.Fatalf("ReadAt(%d, %d): %v", off, n, err)
					}
					got, err := io.ReadAll(r)
					if err != nil || !bytes.Equal(got, want[off:off+n]) {
						t.Fatalf("ReadAt(%d, %d): %d bytes, %v", off, n, len(got), err)
					}
					if rr.calls != 1 {
						t.Fatalf("ReadAt(%d, %d) sent %d requests", off, n, rr.calls)
					}
				}
			})
		}
	}
}

// TestResumeFromEveryCheckpointToTheEnd: each checkpoint, read to the
// blob's end, yields the rest of the gunzip.
func TestResumeFromEveryCheckpointToTheEnd(t *testing.T) {
	for _, b := range blobs(t) {
		want := gunzip(t, b.z)
		ix, _ := build(t, b.z, WithSpan(256<<10))
		for i, c := range ix.Checkpoints {
			s := Range{From: i, To: len(ix.Checkpoints), Offset: c.Offset(), Length: ix.CompressedSize - c.Offset(), Out: c.Out}
			r, err := ix.Resume(s, bytes.NewReader(b.z[c.Offset():]))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, want[c.Out:]) {
				t.Fatalf("%s: from checkpoint %d: %d bytes, %v; want %d", b.name, i, len(got), err, len(want)-int(c.Out))
			}
		}
	}
}

// TestLocateAsksFromTheCheckpointBeforeToTheOneAfter: the range runs from
// the checkpoint at or before off to the first at or after off+n.
func TestLocateAsksFromTheCheckpointBeforeToTheOneAfter(t *testing.T) {
	ix := &Index{Span: 10, CompressedSize: 100, UncompressedSize: 1000, Checkpoints: []Checkpoint{
		{In: 0, Out: 0, Header: true}, {In: 163, Out: 300}, {In: 400, Out: 600}, {In: 640, Out: 900, Header: true},
	}}
	for _, tc := range []struct {
		off, n         int64
		from, to       int
		offset, length int64
	}{
		{0, 0, 0, 1, 0, 21},
		{0, 300, 0, 1, 0, 21},
		{0, 301, 0, 2, 0, 50},
		{299, 2, 0, 2, 0, 50},
		{300, 1, 1, 2, 20, 30},
		{650, 350, 2, 4, 50, 50},
		{900, 100, 3, 4, 80, 20},
		{1000, 0, 3, 4, 80, 20},
	} {
		s, err := ix.Locate(tc.off, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if s.From != tc.from || s.To != tc.to || s.Offset != tc.offset || s.Length != tc.length || s.Out != ix.Checkpoints[tc.from].Out {
			t.Errorf("Locate(%d, %d) = %+v, want from %d to %d, bytes %d+%d", tc.off, tc.n, s, tc.from, tc.to, tc.offset, tc.length)
		}
	}
	for _, bad := range [][2]int64{{-1, 1}, {0, -1}, {1000, 1}, {999, 2}, {1 << 62, 1 << 62}} {
		if _, err := ix.Locate(bad[0], bad[1]); err == nil {
			t.Errorf("Locate(%d, %d) passed", bad[0], bad[1])
		}
	}
}

// TestNotGzipIsCorrupt: what compress/gzip refuses, the build refuses
// with ErrCorrupt.
func TestNotGzipIsCorrupt(t *testing.T) {
	good := gz(t, text(100<<10, 4), 6)
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-5] ^= 1
	for name, z := range map[string][]byte{
		"empty":         nil,
		"not gzip":      []byte("hello, world"),
		"truncated":     good[:len(good)/2],
		"no trailer":    good[:len(good)-8],
		"flipped":       flipped,
		"bad crc":       badCRC,
		"garbage after": append(bytes.Clone(good), "junk"...),
		"method 9":      append([]byte{0x1f, 0x8b, 9}, good[3:]...),
	} {
		_, err := Build(bytes.NewReader(z))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
		if zr, err := gzip.NewReader(bytes.NewReader(z)); err == nil {
			if _, err := io.ReadAll(zr); err == nil {
				t.Errorf("%s: compress/gzip reads it", name)
			}
		}
	}
}

func hasHeaderAfterStart(ix *Index) bool {
	for _, c := range ix.Checkpoints[1:] {
		if c.Header {
			return true
		}
	}
	return false
}

// TestEmptyReadsReturn: a Read of no bytes returns at once, from a build
// and from a resumed range.
func TestEmptyReadsReturn(t *testing.T) {
	z := gz(t, text(100<<10, 16), 6)
	r := NewReader(bytes.NewReader(z), WithSpan(16<<10))
	if n, err := r.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	ix, err := r.Index()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := ix.Locate(50<<10, 10)
	rr, err := ix.Resume(s, bytes.NewReader(z[s.Offset:s.Offset+s.Length]))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rr.Read([]byte{}); n != 0 || err != nil {
		t.Fatalf("Read([]) = %d, %v", n, err)
	}
}

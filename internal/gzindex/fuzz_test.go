package gzindex

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"
)

// FuzzUnmarshal: any bytes decode to a valid index or ErrInvalidIndex,
// never a panic; what decodes re-encodes to an index that decodes the
// same, and Locate on it stays in its bounds.
func FuzzUnmarshal(f *testing.F) {
	for _, span := range []int64{1, 4 << 10} {
		ix, _ := build(f, append(gz(f, text(8<<10, 10), 6), gz(f, random(1<<10, 11), 1)...), WithSpan(span))
		enc, _ := ix.MarshalBinary()
		f.Add(enc)
		f.Add(enc[:len(enc)/2])
	}
	f.Add([]byte("WGZI\x01"))
	small, _ := (&Index{Span: 1, CompressedSize: 20, Checkpoints: []Checkpoint{{Header: true}}}).MarshalBinary()
	f.Add(small)
	f.Fuzz(func(t *testing.T, b []byte) {
		// The trailer's CRC is set right, or every mutation would stop at
		// the checksum and the parser behind it would go untried.
		if len(b) >= 4 {
			binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(b[:len(b)-4]))
		}
		ix, err := Unmarshal(b)
		if err != nil {
			return
		}
		enc, err := ix.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		again, err := Unmarshal(enc)
		if err != nil || len(again.Checkpoints) != len(ix.Checkpoints) || again.UncompressedSize != ix.UncompressedSize {
			t.Fatalf("re-encoded index: %v", err)
		}
		for _, off := range []int64{0, ix.UncompressedSize / 2, ix.UncompressedSize} {
			s, err := ix.Locate(off, ix.UncompressedSize-off)
			if err != nil {
				t.Fatal(err)
			}
			if s.Offset < 0 || s.Length < 0 || s.Offset+s.Length > ix.CompressedSize {
				t.Fatalf("Locate(%d) = %+v outside %d bytes", off, s, ix.CompressedSize)
			}
		}
	})
}

// FuzzResumeArbitraryBytes: a valid index resumed on any bytes (what a
// hostile server could send for the range) errors or yields bytes within
// the DEFLATE expansion bound, never a panic; the true bytes yield the
// gunzip.
func FuzzResumeArbitraryBytes(f *testing.F) {
	z := append(gz(f, text(48<<10, 12), 6), gz(f, random(2<<10, 13), 6)...)
	want := gunzip(f, z)
	ix, _ := build(f, z, WithSpan(8<<10))
	for i := range ix.Checkpoints {
		s, _ := ix.Locate(ix.Checkpoints[i].Out, 0)
		f.Add(uint8(i), z[s.Offset:s.Offset+s.Length])
	}
	f.Add(uint8(1), []byte{0xff, 0x00, 0x13})
	f.Fuzz(func(t *testing.T, i uint8, body []byte) {
		off := ix.Checkpoints[int(i)%len(ix.Checkpoints)].Out
		s, err := ix.Locate(off, min(10<<10, ix.UncompressedSize-off))
		if err != nil {
			t.Fatal(err)
		}
		r, err := ix.Resume(s, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		// A span is at most 8 KiB of checkpoints plus 10 KiB read; 1 MiB
		// keeps a mutated stream of long matches from costing seconds.
		got, err := io.ReadAll(io.LimitReader(r, 1<<20))
		if int64(len(got)) > int64(len(body))*1032 {
			t.Fatalf("%d bytes out of %d in: past DEFLATE's 1032:1", len(got), len(body))
		}
		if err == nil && bytes.Equal(body, z[s.Offset:s.Offset+s.Length]) && !bytes.Equal(got, want[s.Out:s.Out+int64(len(got))]) {
			t.Fatal("the true range decodes wrong")
		}
	})
}

// FuzzBuild: whatever compress/gzip reads, the build reads to the same
// bytes, and every checkpoint it records resumes to the rest of them.
func FuzzBuild(f *testing.F) {
	f.Add(gz(f, text(4<<10, 14), 6))
	f.Add(append(gz(f, nil, 6), gz(f, random(1<<10, 15), 0)...))
	f.Add([]byte{0x1f, 0x8b, 8, 0x1f, 0, 0, 0, 0, 0, 0xff, 0, 0, 'n', 0, 'c', 0, 0, 0})
	f.Fuzz(func(t *testing.T, z []byte) {
		var want []byte
		zr, err := gzip.NewReader(bytes.NewReader(z))
		if err == nil {
			want, err = io.ReadAll(io.LimitReader(zr, 1<<20))
		}
		ix, out, berr := buildCapped(z)
		if err != nil || berr != nil {
			return
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("the build's %d bytes differ from compress/gzip's %d", len(out), len(want))
		}
		// Eight checkpoints, spread, keep an execution linear in the input.
		step := max(1, len(ix.Checkpoints)/8)
		for i := 0; i < len(ix.Checkpoints); i += step {
			c := ix.Checkpoints[i]
			r, err := ix.ReadAt(context.Background(), &ranges{b: z}, c.Out, ix.UncompressedSize-c.Out)
			if err != nil {
				t.Fatalf("checkpoint %d: %v", i, err)
			}
			if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, want[c.Out:]) {
				t.Fatalf("checkpoint %d: %d bytes, %v", i, len(got), err)
			}
		}
	})
}

func buildCapped(z []byte) (*Index, []byte, error) {
	r := NewReader(bytes.NewReader(z), WithSpan(512))
	out, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return nil, nil, err
	}
	ix, err := r.Index()
	return ix, out, err
}

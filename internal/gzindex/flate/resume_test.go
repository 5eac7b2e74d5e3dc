package flate

import (
	"bytes"
	stdflate "compress/flate"
	"io"
	"math/rand"
	"strings"
	"testing"
)

// corpus is what the tests compress: incompressible, text, runs, and a
// mix whose matches reach back across block boundaries.
func corpus() map[string][]byte {
	rnd := rand.New(rand.NewSource(1))
	random := make([]byte, 300<<10)
	rnd.Read(random)
	var text strings.Builder
	for text.Len() < 400<<10 {
		text.WriteString("the quick brown fox jumps over the lazy dog ")
		text.WriteString(strings.Repeat("x", rnd.Intn(40)))
		text.WriteByte(byte('a' + rnd.Intn(26)))
	}
	mixed := append(append([]byte(text.String()[:100<<10]), random[:50<<10]...), text.String()[:150<<10]...)
	return map[string][]byte{
		"empty":  nil,
		"byte":   {'x'},
		"random": random,
		"text":   []byte(text.String()),
		"zeros":  make([]byte, 1<<20),
		"mixed":  mixed,
	}
}

func deflate(t testing.TB, data []byte, level int) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := stdflate.NewWriter(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	// Flushes in the middle make empty stored blocks and byte-aligned
	// boundaries, as pigz and Z_SYNC_FLUSH writers do.
	for i := 0; i < len(data); i += 70 << 10 {
		w.Write(data[i:min(len(data), i+70<<10)])
		if i%(140<<10) == 0 {
			w.Flush()
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type boundary struct {
	bit, out int64
	window   []byte
}

// TestResumeAtEveryBoundaryEqualsTheRest: a reader resumed at any block
// boundary, with the window the hook gave, decodes exactly the rest of
// the output the standard library's reader gives.
func TestResumeAtEveryBoundaryEqualsTheRest(t *testing.T) {
	for name, data := range corpus() {
		for _, level := range []int{stdflate.HuffmanOnly, stdflate.NoCompression, stdflate.BestSpeed, stdflate.DefaultCompression, stdflate.BestCompression} {
			z := deflate(t, data, level)
			want, err := io.ReadAll(stdflate.NewReader(bytes.NewReader(z)))
			if err != nil || !bytes.Equal(want, data) {
				t.Fatalf("%s/%d: the standard reader: %v", name, level, err)
			}
			var bs []boundary
			r := Config{OnBlock: func(b Boundary) error {
				bs = append(bs, boundary{b.Bit, b.Out, b.AppendWindow(nil)})
				return nil
			}}.NewReader(bytes.NewReader(z))
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s/%d: got %d bytes, %v; want %d", name, level, len(got), err, len(want))
			}
			if len(bs) == 0 || bs[0].bit != 0 || bs[0].out != 0 {
				t.Fatalf("%s/%d: the first boundary is %+v, want the start", name, level, bs)
			}
			for _, b := range bs {
				if w := want[max(0, b.out-WindowSize):b.out]; !bytes.Equal(b.window, w) {
					t.Fatalf("%s/%d: the window at %d is not the last output", name, level, b.out)
				}
				r := Config{Window: b.window, SkipBits: uint(b.bit % 8)}.NewReader(bytes.NewReader(z[b.bit/8:]))
				rest, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(rest, want[b.out:]) {
					t.Fatalf("%s/%d: resumed at bit %d (out %d): %d bytes, %v; want %d", name, level, b.bit, b.out, len(rest), err, len(want)-int(b.out))
				}
			}
		}
	}
}

// TestOnBlockErrorEndsTheStream: the hook's error comes out of Read after
// the bytes decoded before the boundary.
func TestOnBlockErrorEndsTheStream(t *testing.T) {
	data := corpus()["text"]
	z := deflate(t, data, stdflate.BestSpeed)
	stop := io.ErrClosedPipe
	var at int64 = -1
	r := Config{OnBlock: func(b Boundary) error {
		if b.Out > 0 {
			at = b.Out
			return stop
		}
		return nil
	}}.NewReader(bytes.NewReader(z))
	got, err := io.ReadAll(r)
	if err != stop || int64(len(got)) != at || !bytes.Equal(got, data[:at]) {
		t.Fatalf("got %d bytes, %v; want %d bytes, %v", len(got), err, at, stop)
	}
}

func TestSkipBitsOver7IsRefused(t *testing.T) {
	if _, err := io.ReadAll(Config{SkipBits: 8}.NewReader(bytes.NewReader([]byte{0}))); err != ErrSkipBits {
		t.Fatalf("err = %v", err)
	}
}

// FuzzResume: any bytes, skip and window decode without a panic, within
// the bytes a DEFLATE stream can expand to; with no skip and no window
// the output is the standard library's whenever that succeeds.
func FuzzResume(f *testing.F) {
	for _, data := range corpus() {
		z := deflate(f, data[:min(len(data), 2<<10)], stdflate.BestSpeed)
		f.Add(z, uint8(0), []byte(nil))
		f.Add(z[1:], uint8(3), []byte("window"))
	}
	f.Add([]byte{0x01, 0x00, 0x00, 0xff, 0xff}, uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, z []byte, skip uint8, window []byte) {
		r := Config{Window: window, SkipBits: uint(skip % 8)}.NewReader(bytes.NewReader(z))
		// DEFLATE expands at most 1032:1 (258 bytes from 2 bits); 1 MiB
		// keeps one execution short.
		got, err := io.ReadAll(io.LimitReader(r, 1<<20))
		if int64(len(got)) > int64(len(z))*1032 {
			t.Fatalf("%d bytes out of %d in", len(got), len(z))
		}
		if skip%8 != 0 || len(window) != 0 || len(got) == 1<<20 {
			return
		}
		want, werr := io.ReadAll(io.LimitReader(stdflate.NewReader(bytes.NewReader(z)), 1<<20))
		if werr == nil && (err != nil || !bytes.Equal(got, want)) {
			t.Fatalf("got %d bytes, %v; the standard library %d bytes", len(got), err, len(want))
		}
	})
}

package gzindex

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/wharfproject/wharf/internal/decompress"
)

func clone(ix *Index) *Index {
	c := *ix
	c.Checkpoints = append([]Checkpoint(nil), ix.Checkpoints...)
	return &c
}

// TestHostileIndexIsAClearError: an index that lies about the blob gives
// ErrInvalidIndex (or ErrCorrupt where the lie makes the blob's bits
// undecodable), never wrong bytes passed off as right nor a panic.
func TestHostileIndexIsAClearError(t *testing.T) {
	// Text, random bytes (whose blocks need no window), and text again,
	// so that the last span needs its window.
	z := gz(t, append(append(text(600<<10, 5), random(100<<10, 6)...), text(300<<10, 18)...), 6)
	want := gunzip(t, z)
	good, _ := build(t, z, WithSpan(64<<10))
	if len(good.Checkpoints) < 6 {
		t.Fatalf("%d checkpoints; the cases need 6", len(good.Checkpoints))
	}
	for _, tc := range []struct {
		name   string
		break_ func(ix *Index)
		// read from checkpoint 2 to checkpoint 4 unless said
		from, to int
	}{
		{name: "windows swapped", break_: func(ix *Index) {
			c := ix.Checkpoints
			c[2].Window, c[3].Window = c[3].Window, c[2].Window
			c[2].WindowCRC, c[3].WindowCRC = c[3].WindowCRC, c[2].WindowCRC
		}},
		{name: "window bytes corrupt", break_: func(ix *Index) {
			w := bytes.Clone(ix.Checkpoints[2].Window)
			w[len(w)/2] ^= 0x55
			ix.Checkpoints[2].Window = w
		}},
		{name: "window CRC wrong", break_: func(ix *Index) { ix.Checkpoints[2].WindowCRC ^= 1 }},
		{name: "member CRC wrong at the start", break_: func(ix *Index) { ix.Checkpoints[2].CRC ^= 1 }},
		{name: "member CRC wrong at the end", break_: func(ix *Index) { ix.Checkpoints[4].CRC ^= 1 }},
		{name: "member CRC wrong in the last span", break_: func(ix *Index) { ix.Checkpoints[len(ix.Checkpoints)-1].CRC ^= 1 }, from: -1, to: -1},
		{name: "window wrong in the last span", break_: func(ix *Index) {
			c := ix.Checkpoints
			last, prev := &c[len(c)-1], c[len(c)-2]
			last.Window, last.WindowCRC, last.WindowLen = prev.Window, prev.WindowCRC, prev.WindowLen
		}, from: -1, to: -1},
		{name: "window too long", break_: func(ix *Index) { ix.Checkpoints[2].WindowLen = 40 << 10 }},
		{name: "window shorter than it decodes", break_: func(ix *Index) { ix.Checkpoints[2].WindowLen-- }},
		{name: "bit off by one", break_: func(ix *Index) { ix.Checkpoints[2].In++ }},
		{name: "next bit off by one", break_: func(ix *Index) { ix.Checkpoints[3].In-- }},
		{name: "out off by one", break_: func(ix *Index) { ix.Checkpoints[2].Out++ }},
		{name: "next out off by one", break_: func(ix *Index) { ix.Checkpoints[3].Out++ }},
		{name: "a block called a header", break_: func(ix *Index) {
			c := &ix.Checkpoints[3]
			c.In, c.Header, c.Window, c.WindowLen = c.In&^7, true, nil, 0
		}},
		{name: "offset past the end", break_: func(ix *Index) { ix.Checkpoints[5].In = ix.CompressedSize * 8 }},
		{name: "out past the end", break_: func(ix *Index) { ix.Checkpoints[5].Out = ix.UncompressedSize + 1 }},
		{name: "not monotone in", break_: func(ix *Index) { ix.Checkpoints[3].In = ix.Checkpoints[2].In }},
		{name: "not monotone out", break_: func(ix *Index) { ix.Checkpoints[3].Out = ix.Checkpoints[2].Out - 1 }},
		{name: "first is not the start", break_: func(ix *Index) { ix.Checkpoints[0].Out = 1 }},
		{name: "no checkpoints", break_: func(ix *Index) { ix.Checkpoints = nil }},
		{name: "negative size", break_: func(ix *Index) { ix.UncompressedSize = -1 }},
		{name: "zero span", break_: func(ix *Index) { ix.Span = 0 }},
		{name: "uncompressed size short", break_: func(ix *Index) { ix.UncompressedSize-- }, from: 2, to: -1},
		{name: "uncompressed size long", break_: func(ix *Index) { ix.UncompressedSize++ }, from: 2, to: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := clone(good)
			tc.break_(ix)
			from, to := 2, 4
			if tc.to == -1 {
				from, to = tc.from, len(good.Checkpoints)
				if from == -1 {
					from = len(good.Checkpoints) - 1
				}
			}
			err := readSpan(ix, z, from, to, want)
			if !errors.Is(err, ErrInvalidIndex) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrInvalidIndex or ErrCorrupt", err)
			}
			// The same lie, encoded and decoded, is refused as early or
			// as clearly.
			if enc, err := ix.MarshalBinary(); err == nil {
				if dec, err := Unmarshal(enc); err == nil {
					if err := readSpan(dec, z, from, to, want); !errors.Is(err, ErrInvalidIndex) && !errors.Is(err, ErrCorrupt) {
						t.Fatalf("decoded: err = %v", err)
					}
				} else if !errors.Is(err, ErrInvalidIndex) {
					t.Fatalf("Unmarshal: %v", err)
				}
			}
		})
	}
	// The good index passes the same reads.
	if err := readSpan(good, z, 2, 4, want); err != nil {
		t.Fatal(err)
	}
}

// readSpan decodes checkpoints [from, to) of ix and compares with want;
// wrong bytes without an error are a failure of their own.
func readSpan(ix *Index, z []byte, from, to int, want []byte) error {
	if err := ix.Validate(); err != nil {
		return err
	}
	cps := ix.Checkpoints
	end := int64(len(z))
	if to < len(cps) {
		end = (cps[to].In + 7) / 8
	}
	s := Range{From: from, To: to, Offset: cps[from].Offset(), Length: end - cps[from].Offset(), Out: cps[from].Out}
	if s.Offset > end || end > int64(len(z)) {
		return errors.New("the test's span is outside the blob")
	}
	r, err := ix.Resume(s, bytes.NewReader(z[s.Offset:end]))
	if err != nil {
		return err
	}
	got, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.Out+int64(len(got)) > int64(len(want)) || !bytes.Equal(got, want[s.Out:s.Out+int64(len(got))]) {
		return errors.New("wrong bytes without an error")
	}
	return nil
}

// TestEncodingDamageIsInvalidIndex: truncations, a flipped bit, a wrong
// magic and an oversize count are ErrInvalidIndex.
func TestEncodingDamageIsInvalidIndex(t *testing.T) {
	z := gz(t, text(300<<10, 7), 6)
	ix, _ := build(t, z, WithSpan(32<<10))
	enc, _ := ix.MarshalBinary()
	for i := 0; i < len(enc); i += max(1, len(enc)/50) {
		if _, err := Unmarshal(enc[:i]); !errors.Is(err, ErrInvalidIndex) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
		flipped := bytes.Clone(enc)
		flipped[i] ^= 4
		if _, err := Unmarshal(flipped); !errors.Is(err, ErrInvalidIndex) {
			t.Fatalf("bit flipped at %d: %v", i, err)
		}
	}
	if _, err := Unmarshal(make([]byte, MaxEncodedSize+1)); !errors.Is(err, ErrInvalidIndex) || !errdefs.IsDataLoss(err) {
		t.Fatalf("oversize: %v", err)
	}
}

// TestBombCapsApplyToBuildAndRead: zeros past slack + ratio × compressed
// are refused (InvalidArgument) by a build and by a resumed read.
func TestBombCapsApplyToBuildAndRead(t *testing.T) {
	z := gz(t, make([]byte, 8<<20), 9)
	lim := decompress.Limit{Slack: 1 << 20, Ratio: 2}
	if _, err := Build(bytes.NewReader(z), WithLimit(lim)); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("build: err = %v, want InvalidArgument", err)
	}
	ix, _ := build(t, z)
	r, err := ix.ReadAt(context.Background(), &ranges{b: z}, 0, 8<<20, WithLimit(lim))
	if err == nil {
		_, err = io.Copy(io.Discard, r)
	}
	if !errdefs.IsInvalidArgument(err) {
		t.Fatalf("read: err = %v, want InvalidArgument", err)
	}
}

// TestCapsStopCheckpointsNotReads: past the checkpoint cap the build
// records no more, says so, and reads past the last one still equal the
// gunzip.
func TestCapsStopCheckpointsNotReads(t *testing.T) {
	z := gz(t, text(1<<20, 8), 6)
	want := gunzip(t, z)
	for _, caps := range [][2]int64{{3, MaxWindowBytes}, {MaxCheckpoints, 20 << 10}} {
		ix, _ := build(t, z, WithSpan(16<<10), WithCaps(int(caps[0]), caps[1]))
		if !ix.Capped || len(ix.Checkpoints) > int(caps[0]) {
			t.Fatalf("caps %v: %d checkpoints, capped %v", caps, len(ix.Checkpoints), ix.Capped)
		}
		off := int64(len(want)) - 1000
		r, err := ix.ReadAt(context.Background(), &ranges{b: z}, off, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, want[off:]) {
			t.Fatalf("caps %v: %d bytes, %v", caps, len(got), err)
		}
	}
}

// TestShortRangeIsAnError: a range cut before the span's end is an error,
// not a short read.
func TestShortRangeIsAnError(t *testing.T) {
	z := gz(t, text(500<<10, 9), 6)
	ix, _ := build(t, z, WithSpan(64<<10))
	r, err := ix.ReadAt(context.Background(), &short{ranges{b: z}}, 100<<10, 50<<10)
	if err == nil {
		_, err = io.ReadAll(r)
	}
	if err == nil {
		t.Fatal("a short range read passed")
	}
}

type short struct{ ranges }

func (s *short) ReadRange(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	return s.ranges.ReadRange(ctx, off, n/2)
}

// TestReadAtChecksTheSpanBeforeEOF: a read of a few bytes decodes the
// rest of its span before io.EOF, so a wrong CRC at the span's end fails
// the read rather than passing it.
func TestReadAtChecksTheSpanBeforeEOF(t *testing.T) {
	z := gz(t, text(400<<10, 17), 6)
	ix, _ := build(t, z, WithSpan(16<<10))
	if len(ix.Checkpoints) < 3 {
		t.Fatalf("%d checkpoints; the test needs 3", len(ix.Checkpoints))
	}
	bad := clone(ix)
	bad.Checkpoints[2].CRC ^= 1
	off := bad.Checkpoints[1].Out + 10
	r, err := bad.ReadAt(context.Background(), &ranges{b: z}, off, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); !errors.Is(err, ErrInvalidIndex) {
		t.Fatalf("err = %v, want ErrInvalidIndex", err)
	}
}

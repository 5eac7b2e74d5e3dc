package distribution

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
)

// chunkReader returns at most n bytes per Read, like a network body.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// readAllChunks reads r to EOF with a buffer of n bytes (io.Copy to
// io.Discard would pick its own 8 KiB buffer).
func readAllChunks(r io.Reader, n int) (int64, error) {
	buf := make([]byte, n)
	var total int64
	for {
		k, err := r.Read(buf)
		total += int64(k)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func TestProgressReaderThrottles(t *testing.T) {
	const chunk = 64 << 10
	tests := []struct {
		name  string
		size  int
		tick  time.Duration // clock advance per Read
		wantN int           // Downloading messages
	}{
		// Fast link: 512 KiB reached every 8 reads, but 100 ms only every
		// 10 reads, so time is the bound: 4 MiB = 64 reads → 6 + the final one.
		{"time bound", 4 << 20, 10 * time.Millisecond, 7},
		// Slow link: 100 ms pass every read, bytes are the bound: every 8 reads.
		{"bytes bound", 4 << 20, time.Second, 8},
		// Smaller than one threshold: only the final update.
		{"tiny", 1000, time.Second, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got graphtest.Messages
			po := newProgressOutput(&got)
			now := time.Unix(1000, 0)
			verified := 0
			pr := newProgressReader(&chunkReader{r: bytes.NewReader(make([]byte, tc.size)), n: chunk}, po, "abc", "Downloading", int64(tc.size))
			pr.now = func() time.Time { now = now.Add(tc.tick); return now }
			pr.onEOF = func() { verified++ }
			n, err := readAllChunks(pr, chunk)
			if err != nil || n != int64(tc.size) {
				t.Fatalf("copy: %d, %v", n, err)
			}
			if got.Len() != tc.wantN {
				t.Fatalf("got %d messages, want %d", got.Len(), tc.wantN)
			}
			last := got.Last()
			if last.Progress == nil || last.Progress.Current != int64(tc.size) || last.Progress.Total != int64(tc.size) || last.ID != "abc" || last.Status != "Downloading" {
				t.Fatalf("last message %+v", last)
			}
			if verified != 1 {
				t.Fatalf("onEOF called %d times, want 1", verified)
			}
		})
	}
}

func TestProgressOutputKeepsFirstWriteError(t *testing.T) {
	calls := 0
	po := newProgressOutput(types.ProgressFunc(func(jsonstream.Message) error {
		calls++
		return io.ErrClosedPipe
	}))
	if err := po.layer("a", "Waiting"); err != io.ErrClosedPipe {
		t.Fatalf("first write: %v", err)
	}
	if err := po.layer("a", "Waiting"); err != io.ErrClosedPipe || calls != 1 {
		t.Fatalf("second write: %v after %d calls; want the kept error and no new call", err, calls)
	}
}

func TestLayerMessagesHaveEmptyProgressDetail(t *testing.T) {
	var got graphtest.Messages
	po := newProgressOutput(&got)
	_ = po.layer("1938d640a317", "Pulling fs layer")
	_ = po.status("1.0", "Pulling from tiny")
	if got.At(0).Progress == nil {
		t.Fatal("layer status without progressDetail; dockerd sends {}")
	}
	if got.At(1).Progress != nil {
		t.Fatal("Pulling from carries a progressDetail; dockerd sends none")
	}
}

func TestShortID(t *testing.T) {
	d := digest.FromString("x")
	if got := shortID(d); got != d.Encoded()[:12] {
		t.Fatalf("shortID = %q", got)
	}
}

func TestSplitTypedName(t *testing.T) {
	d := digest.FromString("x")
	tests := []struct {
		in      string
		want    typedName
		wantErr bool
	}{
		{"busybox", typedName{Repo: "busybox"}, false},
		{"busybox:1.36", typedName{Repo: "busybox", Tag: "1.36"}, false},
		{"127.0.0.1:5000/tiny:1.0", typedName{Repo: "127.0.0.1:5000/tiny", Tag: "1.0"}, false},
		{"127.0.0.1:5000/tiny", typedName{Repo: "127.0.0.1:5000/tiny"}, false},
		{"tiny@" + d.String(), typedName{Repo: "tiny", Digest: d}, false},
		{"tiny:1.0@" + d.String(), typedName{Repo: "tiny", Tag: "1.0", Digest: d}, false},
		{"UPPER:case", typedName{}, true},
		{"", typedName{}, true},
		{"a/b:c:d", typedName{}, true},
	}
	for _, tc := range tests {
		got, err := splitTypedName(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("splitTypedName(%q) err = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if got != tc.want {
			t.Errorf("splitTypedName(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if got := (typedName{Tag: "1.0", Digest: d}).pin(); got != d.String() {
		t.Errorf("pin prefers the digest; got %q", got)
	}
}

func FuzzSplitTypedName(f *testing.F) {
	for _, s := range []string{"busybox", "a/b:c", "127.0.0.1:5000/tiny@sha256:" + strings.Repeat("a", 64), "UPPER", ":", "@", "x:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tn, err := splitTypedName(s)
		if err != nil {
			return
		}
		if tn.Repo == "" {
			t.Fatalf("%q: accepted with an empty repository", s)
		}
		if tn.Digest != "" && tn.Digest.Validate() != nil {
			t.Fatalf("%q: invalid digest %q accepted", s, tn.Digest)
		}
	})
}

package distribution

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func boundedBlobs(n int) []ocispec.Descriptor {
	out := make([]ocispec.Descriptor, n)
	for i := range out {
		out[i] = ocispec.Descriptor{Digest: digest.FromString(string(rune('a' + i)))}
	}
	return out
}

// At most limit run at once in each pool, and a blob that finds no free
// slot is reported waiting: the four running hold their slots until the
// other five have said they wait.
func TestEachBoundedLimitsEachPool(t *testing.T) {
	layers, configs := boundedBlobs(6), boundedBlobs(3)
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	var running, peak, ran, waited atomic.Int32
	release := make(chan struct{})
	fn := func(ocispec.Descriptor, func()) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		ran.Add(1)
		running.Add(-1)
		return nil
	}
	waiting := func(ocispec.Descriptor) error {
		if waited.Add(1) == 5 { // 9 blobs, 2 slots in each of 2 pools
			close(release)
		}
		return nil
	}
	if err := eachBounded(stop, cancel, 2, waiting, fn, layers, configs); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 9 || peak.Load() > 4 || waited.Load() != 5 {
		t.Fatalf("ran %d (want 9), peak %d (want ≤ 4: 2 per pool), waited %d (want 5)", ran.Load(), peak.Load(), waited.Load())
	}
}

// The answer is the blob that failed by itself, never the "canceled" of a
// blob that was only stopped: with one slot, when the second blob runs
// first and fails, the first is stopped while waiting, and its error must
// not hide the failure (push returned the first error in layer order,
// which was then "context canceled").
func TestEachBoundedReturnsTheOwnFailure(t *testing.T) {
	blobs := boundedBlobs(2)
	boom := errors.New("boom")
	for range 50 {
		stop, cancel := context.WithCancel(context.Background())
		err := eachBounded(stop, cancel, 1, nil, func(d ocispec.Descriptor, _ func()) error {
			if d.Digest == blobs[1].Digest {
				return boom
			}
			return nil
		}, blobs)
		cancel()
		if !errors.Is(err, boom) {
			t.Fatalf("err %v, want boom", err)
		}
	}
}

// A client that leaves stops what has not started, and that is the answer
// when nothing failed by itself.
func TestEachBoundedStopsWhenTheClientLeaves(t *testing.T) {
	stop, cancel := context.WithCancel(context.Background())
	cancel()
	var ran atomic.Int32
	err := eachBounded(stop, cancel, 1, nil, func(ocispec.Descriptor, func()) error { ran.Add(1); return nil }, boundedBlobs(3))
	if !errors.Is(err, context.Canceled) || ran.Load() != 0 {
		t.Fatalf("err %v, ran %d; want canceled and none run", err, ran.Load())
	}
}

// A blob that gives its slot back early (pull, before its fsync) lets the
// next one start while it still runs, and the slot is not given back twice.
func TestEachBoundedReleaseLetsTheNextStart(t *testing.T) {
	blobs := boundedBlobs(3)
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	var running, peak atomic.Int32
	started := make(chan struct{}, len(blobs))
	err := eachBounded(stop, cancel, 1, nil, func(_ ocispec.Descriptor, release func()) error {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		started <- struct{}{}
		release()
		release()
		// Hold on until every blob has started (only the early release
		// lets them, with one slot), or give up after 10 s: then peak says.
		for deadline := time.Now().Add(10 * time.Second); len(started) < len(blobs) && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		return nil
	}, blobs)
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() < 2 {
		t.Fatalf("peak %d: the released slot was not taken while its blob ran", peak.Load())
	}
}

package distribution

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/wharfproject/wharf/graph/internal/graphtest"
)

type countingObserver struct {
	inFlight, pulled, pushed atomic.Int64
}

func (o *countingObserver) PullsInFlight(d int)      { o.inFlight.Add(int64(d)) }
func (o *countingObserver) PulledBytes(n int64)      { o.pulled.Add(n) }
func (o *countingObserver) PushedBytes(n int64)      { o.pushed.Add(n) }
func (o *countingObserver) SyncImage(string, string) {}

// Layer bytes are counted once as they are read from the registry, a
// layer already stored not at all.
func TestPulledBytesCountLayersRead(t *testing.T) {
	obs := &countingObserver{}
	bt := newBlobTransfers(Options{Observer: obs})
	layers, blobs := remoteTestLayers(3)
	f := &remoteFakeFetcher{blobs: blobs}
	dst := &remoteFakeIngester{}
	// The first layer is already stored: it is not read.
	if err := dst.WriteBlob(context.Background(), layers[0], bytes.NewReader(blobs[layers[0].Digest])); err != nil {
		t.Fatal(err)
	}
	if err := bt.downloadLayers(context.Background(), f, dst, layers, newProgressOutput(&graphtest.Messages{})); err != nil {
		t.Fatal(err)
	}
	want := layers[1].Size + layers[2].Size
	if got := obs.pulled.Load(); got != want {
		t.Errorf("pulled bytes %d, want %d", got, want)
	}
}

// A pull is in flight from its start to its end, however it ends, and
// ending twice counts once.
func TestPullInFlightIsBalanced(t *testing.T) {
	obs := &countingObserver{}
	bt := newBlobTransfers(Options{Observer: obs})
	done1 := bt.pullStarted()
	done2 := bt.pullStarted()
	if got := obs.inFlight.Load(); got != 2 {
		t.Fatalf("in flight %d, want 2", got)
	}
	done1()
	done1()
	if got := obs.inFlight.Load(); got != 1 {
		t.Fatalf("in flight after one end (called twice) %d, want 1", got)
	}
	done2()
	if got := obs.inFlight.Load(); got != 0 {
		t.Fatalf("in flight at the end %d, want 0", got)
	}
}

func TestPushedBytesCountReads(t *testing.T) {
	obs := &countingObserver{}
	bt := newBlobTransfers(Options{Observer: obs})
	rc := bt.countPushed(io.NopCloser(bytes.NewReader(make([]byte, 4321))))
	if _, err := io.Copy(io.Discard, rc); err != nil {
		t.Fatal(err)
	}
	if got := obs.pushed.Load(); got != 4321 {
		t.Errorf("pushed bytes %d, want 4321", got)
	}
	// Without an observer nothing is wrapped.
	plain := io.NopCloser(bytes.NewReader(nil))
	if got := newBlobTransfers(Options{}).countPushed(plain); got != plain {
		t.Error("countPushed without an observer wrapped the reader")
	}
}

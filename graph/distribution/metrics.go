package distribution

import (
	"context"
	"io"
	"sync/atomic"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/countio"
)

// Observer is told of pulls and transfers; the daemon's metrics implement
// it (Options.Observer). Its methods must be cheap and safe for concurrent
// use.
type Observer interface {
	// PullsInFlight is +1 when a pull begins and -1 when it ends.
	PullsInFlight(delta int)
	// PulledBytes are layer bytes read from a registry.
	PulledBytes(n int64)
	// PushedBytes are blob bytes read from the store for an upload.
	PushedBytes(n int64)
	// SyncImage is one image a sync finished with, by its source
	// registry: outcome is synced, skipped or failed.
	SyncImage(registry, outcome string)
}

type nopObserver struct{}

func (nopObserver) PullsInFlight(int)        {}
func (nopObserver) PulledBytes(int64)        {}
func (nopObserver) PushedBytes(int64)        {}
func (nopObserver) SyncImage(string, string) {}

// observer is o, or one that does nothing.
func observer(o Observer) Observer {
	if o == nil {
		return nopObserver{}
	}
	return o
}

// pullStarted counts a pull in flight until the returned func is called.
func (bt *blobTransfers) pullStarted() (done func()) {
	o := observer(bt.obs)
	o.PullsInFlight(1)
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			o.PullsInFlight(-1)
		}
	}
}

// observed reports whether anyone listens (else no reader is wrapped).
func (bt *blobTransfers) observed() bool {
	_, nop := observer(bt.obs).(nopObserver)
	return !nop
}

// countPulled makes src's blob readers report the bytes they read.
func (bt *blobTransfers) countPulled(src blobFetcher) blobFetcher {
	if !bt.observed() {
		return src
	}
	cf := countingFetcher{src, bt.obs.PulledBytes}
	if rf, ok := src.(rangeFetcher); ok {
		return countingRangeFetcher{cf, rf}
	}
	return cf
}

// countingRangeFetcher is countingFetcher for a source that resumes:
// counting must not hide that it can.
type countingRangeFetcher struct {
	countingFetcher
	rf rangeFetcher
}

func (f countingRangeFetcher) FetchBlobFrom(ctx context.Context, desc ocispec.Descriptor, have io.Reader, n int64) (io.ReadCloser, error) {
	rc, err := f.rf.FetchBlobFrom(ctx, desc, have, n)
	if err != nil {
		return nil, err
	}
	return &countio.ReadCloser{ReadCloser: rc, Add: f.add}, nil
}

// countPushed makes rc report the bytes read from it.
func (bt *blobTransfers) countPushed(rc io.ReadCloser) io.ReadCloser {
	if !bt.observed() {
		return rc
	}
	return &countio.ReadCloser{ReadCloser: rc, Add: bt.obs.PushedBytes}
}

type countingFetcher struct {
	blobFetcher
	add func(int64)
}

func (f countingFetcher) FetchBlob(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := f.blobFetcher.FetchBlob(ctx, desc)
	if err != nil {
		return nil, err
	}
	cr := &countio.ReadCloser{ReadCloser: rc, Add: f.add}
	if v, ok := rc.(digestVerifier); ok {
		// Counting must not hide that the reader verifies its digest, or
		// the store would hash every layer a second time.
		return countingVerifiedReader{cr, v}, nil
	}
	return cr, nil
}

type countingVerifiedReader struct {
	*countio.ReadCloser
	digestVerifier
}

// syncObserved counts one image a sync finished with.
func (s *Service) syncObserved(registry, outcome string) {
	observer(s.transfers.obs).SyncImage(registry, outcome)
}

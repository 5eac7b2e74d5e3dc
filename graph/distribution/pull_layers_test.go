package distribution

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

// remoteFakeFetcher serves blobs from memory; a blob whose digest is in
// gate blocks until the channel is closed (or the request is cancelled).
type remoteFakeFetcher struct {
	blobs   map[digest.Digest][]byte
	gate    map[digest.Digest]chan struct{}
	started chan digest.Digest // receives each fetch as it starts, when set
	fail    map[digest.Digest]error

	calls    atomic.Int32
	inflight atomic.Int32
	maxSeen  atomic.Int32
}

func (f *remoteFakeFetcher) FetchBlob(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	f.calls.Add(1)
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	if f.started != nil {
		f.started <- desc.Digest
	}
	if g := f.gate[desc.Digest]; g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err := f.fail[desc.Digest]; err != nil {
		return nil, err
	}
	b, ok := f.blobs[desc.Digest]
	if !ok {
		return nil, fmt.Errorf("unknown blob%.0w", errdefs.ErrNotFound)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// remoteFakeIngester is a verifying in-memory content store.
type remoteFakeIngester struct {
	mu    sync.Mutex
	blobs map[digest.Digest][]byte
}

func (s *remoteFakeIngester) HasBlob(d digest.Digest) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.blobs[d]
	return ok
}

func (s *remoteFakeIngester) WriteBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader, opts ...store.WriteOpt) error {
	if o := store.ApplyWriteOpts(opts...); o.Resume != nil {
		rc, err := o.Resume(bytes.NewReader(nil), 0)
		if err != nil {
			return err
		}
		defer rc.Close()
		r = rc
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if digest.FromBytes(b) != desc.Digest || int64(len(b)) != desc.Size {
		return fmt.Errorf("digest mismatch%.0w", errdefs.ErrInvalidArgument)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.blobs == nil {
		s.blobs = map[digest.Digest][]byte{}
	}
	s.blobs[desc.Digest] = b
	return nil
}

func remoteTestLayers(n int) ([]ocispec.Descriptor, map[digest.Digest][]byte) {
	blobs := map[digest.Digest][]byte{}
	var descs []ocispec.Descriptor
	for i := 0; i < n; i++ {
		b := []byte(fmt.Sprintf("layer-%d-%s", i, bytes.Repeat([]byte{'x'}, i*100)))
		d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(b), Size: int64(len(b))}
		blobs[d.Digest] = b
		descs = append(descs, d)
	}
	return descs, blobs
}

// flightTest is one layer whose fetch waits for gate, a remote state that
// reports each caller joining a shared download on joined, and an empty
// destination.
type flightTest struct {
	layers []ocispec.Descriptor
	blobs  map[digest.Digest][]byte
	gate   chan struct{}
	f      *remoteFakeFetcher
	dst    *remoteFakeIngester
	bt     *blobTransfers
	joined chan string
}

func newFlightTest() *flightTest {
	ft := &flightTest{gate: make(chan struct{}), dst: &remoteFakeIngester{}, bt: newBlobTransfers(Options{}), joined: make(chan string, 4)}
	ft.layers, ft.blobs = remoteTestLayers(1)
	ft.f = &remoteFakeFetcher{blobs: ft.blobs, gate: map[digest.Digest]chan struct{}{ft.layers[0].Digest: ft.gate}, started: make(chan digest.Digest, 4)}
	ft.bt.flightJoined = func(key string) { ft.joined <- key }
	return ft
}

func TestSharedBlobDownloadsOnce(t *testing.T) {
	ft := newFlightTest()
	layers, f, dst, bt := ft.layers, ft.f, ft.dst, ft.bt

	var wg sync.WaitGroup
	errs := make([]error, 2)
	outs := []*graphtest.Messages{{}, {}}
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[0] = bt.downloadLayers(context.Background(), f, dst, layers, newProgressOutput(outs[0]))
	}()
	<-f.started // the first pull is inside the fetch, holding the flight
	<-ft.joined
	wg.Add(1)
	second := make(chan struct{})
	go func() {
		defer wg.Done()
		close(second)
		errs[1] = bt.downloadLayers(context.Background(), f, dst, layers, newProgressOutput(outs[1]))
	}()
	<-second
	// The second pull joins the flight while the only fetch is blocked.
	ft.waitForFlight()
	close(ft.gate)
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Fatalf("pull %d: %v", i, err)
		}
	}
	if got := f.calls.Load(); got != 1 {
		t.Fatalf("blob fetched %d times, want 1", got)
	}
	if !dst.HasBlob(layers[0].Digest) {
		t.Fatal("blob not stored")
	}
	id := shortID(layers[0].Digest)
	for i, out := range outs {
		got := out.Statuses(id)
		if len(got) < 3 || got[0] != "Pulling fs layer" || got[len(got)-2] != "Download complete" || got[len(got)-1] != "Pull complete" {
			t.Fatalf("pull %d statuses %v", i, got)
		}
	}
}

// waitForFlight blocks until a second caller has joined the shared
// download of the layer (the first already holds it).
func (ft *flightTest) waitForFlight() {
	for k := range ft.joined {
		if k == ft.layers[0].Digest.String() {
			return
		}
	}
}

func TestDownloadLayersBoundsConcurrency(t *testing.T) {
	layers, blobs := remoteTestLayers(6)
	gates := map[digest.Digest]chan struct{}{}
	for _, l := range layers {
		gates[l.Digest] = make(chan struct{})
	}
	f := &remoteFakeFetcher{blobs: blobs, gate: gates, started: make(chan digest.Digest, len(layers))}
	bt := newBlobTransfers(Options{MaxConcurrentDownloads: 2})
	out := &graphtest.Messages{}
	done := make(chan error, 1)
	go func() {
		done <- bt.downloadLayers(context.Background(), f, &remoteFakeIngester{}, layers, newProgressOutput(out))
	}()
	// Release fetches one at a time as they start: never more than two may
	// be started and unreleased.
	for range layers {
		d := <-f.started
		if n := f.inflight.Load(); n > 2 {
			t.Fatalf("%d fetches in flight, limit 2", n)
		}
		close(gates[d])
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m := f.maxSeen.Load(); m > 2 || m < 1 {
		t.Fatalf("max concurrent fetches %d, want 1..2", m)
	}
	// "Pull complete" comes in layer order, after every layer's download.
	var order []string
	waiting := 0
	for _, m := range out.All() {
		switch m.Status {
		case "Pull complete":
			order = append(order, m.ID)
		case "Waiting":
			waiting++
		}
	}
	for i, l := range layers {
		if i >= len(order) || order[i] != shortID(l.Digest) {
			t.Fatalf("Pull complete order %v", order)
		}
	}
	_ = waiting // how many waited depends on scheduling; the bound above is what matters
}

func TestDownloadLayersAlreadyExistsAndFailure(t *testing.T) {
	layers, blobs := remoteTestLayers(3)
	dst := &remoteFakeIngester{}
	if err := dst.WriteBlob(context.Background(), layers[0], bytes.NewReader(blobs[layers[0].Digest])); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("unknown blob")
	f := &remoteFakeFetcher{blobs: blobs, fail: map[digest.Digest]error{layers[2].Digest: boom}}
	out := &graphtest.Messages{}
	err := newBlobTransfers(Options{}).downloadLayers(context.Background(), f, dst, layers, newProgressOutput(out))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if got := out.Statuses(shortID(layers[0].Digest)); len(got) != 1 || got[0] != "Already exists" {
		t.Fatalf("present layer statuses %v", got)
	}
	// The verified layer stays for the next attempt; the failed one is absent.
	if !dst.HasBlob(layers[1].Digest) || dst.HasBlob(layers[2].Digest) {
		t.Fatal("store should keep the verified layer 1 and lack the failed layer 2")
	}
	for _, s := range out.Statuses(shortID(layers[2].Digest)) {
		if s == "Pull complete" || s == "Download complete" {
			t.Fatalf("failed layer reported %q", s)
		}
	}
}

func TestSharedFetchRetriesAfterLeaderCancelled(t *testing.T) {
	ft := newFlightTest()
	layers, f, dst, bt := ft.layers, ft.f, ft.dst, ft.bt
	po := newProgressOutput(types.DiscardProgress)

	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() { leaderErr <- bt.sharedFetch(leaderCtx, f, dst, layers[0], "x", po, nil) }()
	<-f.started
	<-ft.joined
	followerErr := make(chan error, 1)
	go func() { followerErr <- bt.sharedFetch(context.Background(), f, dst, layers[0], "x", po, nil) }()
	ft.waitForFlight()
	cancelLeader()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader err = %v", err)
	}
	<-f.started // the follower starts its own fetch
	close(ft.gate)
	if err := <-followerErr; err != nil {
		t.Fatalf("follower failed with the leader's cancellation: %v", err)
	}
	if !dst.HasBlob(layers[0].Digest) {
		t.Fatal("blob not stored by the follower")
	}
}

func TestSharedFetchFollowerRetriesOwnSourceOnce(t *testing.T) {
	ft := newFlightTest()
	layers, dst, bt := ft.layers, ft.dst, ft.bt
	d := layers[0].Digest
	denied := fmt.Errorf("denied%.0w", errdefs.ErrUnauthenticated)
	// The first pull's repository refuses the blob; the second's serves it.
	refusing := ft.f
	refusing.fail = map[digest.Digest]error{d: denied}
	serving := &remoteFakeFetcher{blobs: ft.blobs}
	po := newProgressOutput(types.DiscardProgress)

	firstErr := make(chan error, 1)
	go func() { firstErr <- bt.sharedFetch(context.Background(), refusing, dst, layers[0], "x", po, nil) }()
	<-refusing.started
	<-ft.joined
	secondErr := make(chan error, 1)
	go func() { secondErr <- bt.sharedFetch(context.Background(), serving, dst, layers[0], "x", po, nil) }()
	ft.waitForFlight()
	close(ft.gate)
	if err := <-firstErr; !errors.Is(err, denied) {
		t.Fatalf("first pull err = %v, want its own refusal", err)
	}
	if err := <-secondErr; err != nil {
		t.Fatalf("second pull inherited the first pull's failure: %v", err)
	}
	if serving.calls.Load() != 1 || !dst.HasBlob(d) {
		t.Fatalf("second pull did not fetch from its own source (calls %d)", serving.calls.Load())
	}
}

// commitGatedIngester reads each blob whole (the download), then holds the
// first commit until a second download has started.
type commitGatedIngester struct {
	remoteFakeIngester
	commits atomic.Int32
	started <-chan digest.Digest
}

func (s *commitGatedIngester) WriteBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader, _ ...store.WriteOpt) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.commits.Add(1) == 1 {
		select {
		case <-s.started: // the next download began while this commit waits
		case <-time.After(10 * time.Second):
			return errors.New("the next download did not start while a layer was being committed")
		}
	}
	return s.remoteFakeIngester.WriteBlob(ctx, desc, bytes.NewReader(b))
}

// With one download slot, the second layer's download starts while the
// first layer is still being committed (fsynced): the slot bounds
// downloads, and a commit does not hold one (issue 14).
func TestDownloadSlotFreedBeforeCommit(t *testing.T) {
	layers, blobs := remoteTestLayers(2)
	started := make(chan digest.Digest, 2)
	f := &remoteFakeFetcher{blobs: blobs, started: started}
	second := make(chan digest.Digest, 1)
	go func() {
		<-started // the first download
		second <- <-started
	}()
	dst := &commitGatedIngester{started: second}
	bt := newBlobTransfers(Options{MaxConcurrentDownloads: 1})
	if err := bt.downloadLayers(context.Background(), f, dst, layers, newProgressOutput(&graphtest.Messages{})); err != nil {
		t.Fatal(err)
	}
	if m := f.maxSeen.Load(); m != 1 {
		t.Fatalf("%d fetches at once, limit 1", m)
	}
}

// claimingReader is a fetched blob whose reader says it verifies dgst.
type claimingReader struct {
	io.ReadCloser
	dgst digest.Digest
}

func (c claimingReader) VerifiedDigest() digest.Digest { return c.dgst }

type claimingFetcher struct {
	remoteFakeFetcher
	claim func(desc ocispec.Descriptor) digest.Digest
}

func (f *claimingFetcher) FetchBlob(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := f.remoteFakeFetcher.FetchBlob(ctx, desc)
	if err != nil {
		return nil, err
	}
	return claimingReader{rc, f.claim(desc)}, nil
}

// recordingIngester records which write each blob went through.
type recordingIngester struct {
	remoteFakeIngester
	verified, hashed atomic.Int32
}

func (s *recordingIngester) WriteBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader, opts ...store.WriteOpt) error {
	if store.ApplyWriteOpts(opts...).Verified {
		s.verified.Add(1)
	} else {
		s.hashed.Add(1)
	}
	return s.remoteFakeIngester.WriteBlob(ctx, desc, r)
}

// A layer is hashed once: the store skips its hash only for a reader that
// says it verifies this very digest; any other reader's bytes are hashed by
// the store.
func TestFetchBlobIntoHashesOnce(t *testing.T) {
	layers, blobs := remoteTestLayers(2)
	for _, tc := range []struct {
		name     string
		claim    func(ocispec.Descriptor) digest.Digest
		verified int32
		metrics  bool // the pulled bytes counted: the counting reader must not hide the claim
	}{
		{"reader verifies this digest", func(d ocispec.Descriptor) digest.Digest { return d.Digest }, 2, false},
		{"reader verifies this digest, metrics on", func(d ocispec.Descriptor) digest.Digest { return d.Digest }, 2, true},
		{"reader verifies another digest", func(ocispec.Descriptor) digest.Digest { return digest.FromString("other") }, 0, false},
		{"reader verifies nothing", func(ocispec.Descriptor) digest.Digest { return "" }, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &claimingFetcher{remoteFakeFetcher: remoteFakeFetcher{blobs: blobs}, claim: tc.claim}
			dst := &recordingIngester{}
			var opts Options
			if tc.metrics {
				opts.Observer = &countingObserver{}
			}
			bt := newBlobTransfers(opts)
			if err := bt.downloadLayers(context.Background(), f, dst, layers, newProgressOutput(&graphtest.Messages{})); err != nil {
				t.Fatal(err)
			}
			if v, h := dst.verified.Load(), dst.hashed.Load(); v != tc.verified || v+h != 2 {
				t.Fatalf("verified writes %d, hashed writes %d; want %d verified of 2", v, h, tc.verified)
			}
		})
	}
}

// The pull's answer is the layer that failed by itself, never the
// "canceled" of a layer stopped while it waited for the one slot, whichever
// order the layers take the slot in; a layer named twice is downloaded once
// and reported complete twice.
func TestDownloadLayersReturnsTheOwnFailure(t *testing.T) {
	layers, blobs := remoteTestLayers(3)
	boom := errors.New("boom")
	for range 50 {
		f := &remoteFakeFetcher{blobs: blobs, fail: map[digest.Digest]error{layers[1].Digest: boom}}
		err := newBlobTransfers(Options{MaxConcurrentDownloads: 1}).downloadLayers(context.Background(), f, &remoteFakeIngester{}, layers, newProgressOutput(&graphtest.Messages{}))
		if !errors.Is(err, boom) {
			t.Fatalf("err %v, want boom", err)
		}
	}
	twice := []ocispec.Descriptor{layers[0], layers[2], layers[0]}
	f := &remoteFakeFetcher{blobs: blobs}
	out := &graphtest.Messages{}
	if err := newBlobTransfers(Options{}).downloadLayers(context.Background(), f, &remoteFakeIngester{}, twice, newProgressOutput(out)); err != nil {
		t.Fatal(err)
	}
	complete := 0
	for _, s := range out.Statuses(shortID(layers[0].Digest)) {
		if s == "Pull complete" {
			complete++
		}
	}
	if complete != 2 || f.calls.Load() != 2 {
		t.Fatalf("Pull complete %d times (want 2), %d fetches (want 2)", complete, f.calls.Load())
	}
}

// downloadLayers is download on the plan planLayers makes of layers.
func (bt *blobTransfers) downloadLayers(ctx context.Context, src blobFetcher, dst blobIngester, layers []ocispec.Descriptor, po *progressOutput) error {
	return bt.download(ctx, src, dst, planLayers(dst, layers), po)
}

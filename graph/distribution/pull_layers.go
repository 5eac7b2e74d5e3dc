package distribution

import (
	"context"
	"errors"
	"io"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/registry"
)

// blobFetcher is what a pull needs from a registry repository.
type blobFetcher interface {
	FetchBlob(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error)
}

// blobIngester is what a pull needs from the local content store: WriteBlob
// verifies while streaming and makes the blob visible only once verified;
// its options (store.Verified, store.Resumable) say how the bytes arrive.
type blobIngester interface {
	HasBlob(d digest.Digest) bool
	WriteBlob(ctx context.Context, desc ocispec.Descriptor, r io.Reader, opts ...store.WriteOpt) error
}

// rangeFetcher is a blobFetcher that can resume: have yields the first n
// bytes of the blob, kept from a failed download, and the reader delivers
// the rest, verified over the whole blob (registry.FetchBlobFrom).
type rangeFetcher interface {
	FetchBlobFrom(ctx context.Context, desc ocispec.Descriptor, have io.Reader, n int64) (io.ReadCloser, error)
}

// digestVerifier is a fetched blob's reader that fails in place of io.EOF
// unless its bytes are the blob VerifiedDigest() (registry.FetchBlob's).
type digestVerifier interface {
	VerifiedDigest() digest.Digest
}

// layerDownload is one layer of one pull.
type layerDownload struct {
	desc    ocispec.Descriptor
	id      string
	present bool          // already stored before the pull began
	done    chan struct{} // closed when err is final
	err     error
}

// layerPlan is what a pull found stored before it began, one entry per
// layer in order: asked once (planLayers), then carried to the download.
type layerPlan []*layerDownload

// planLayers asks dst once per layer whether it is stored (through a
// lease, which pins what it finds).
func planLayers(dst blobIngester, layers []ocispec.Descriptor) layerPlan {
	plan := make(layerPlan, len(layers))
	for i, l := range layers {
		plan[i] = &layerDownload{desc: l, id: shortID(l.Digest), present: dst.HasBlob(l.Digest), done: make(chan struct{})}
	}
	return plan
}

// complete says whether every layer was stored already.
func (p layerPlan) complete() bool {
	for _, dl := range p {
		if !dl.present {
			return false
		}
	}
	return true
}

// download stores every layer of a pull plan, at most maxDownloads at a
// time (eachBounded, the pool push and copy use), and reports them as
// dockerd does: "Already exists" or "Pulling fs layer" for each first, then
// per layer Waiting / Downloading / Verifying Checksum / Download complete,
// and "Pull complete" in layer order. On the first failure (in layer order)
// the other downloads are cancelled and waited for, so no goroutine writes
// to the stream after it returns. Verified blobs stay in the store for the
// next attempt.
func (bt *blobTransfers) download(ctx context.Context, src blobFetcher, dst blobIngester, dls layerPlan, po *progressOutput) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var missing []*layerDownload
	for _, dl := range dls {
		if dl.present {
			close(dl.done)
			if err := po.layer(dl.id, "Already exists"); err != nil {
				return err
			}
			continue
		}
		if err := po.layer(dl.id, "Pulling fs layer"); err != nil {
			return err
		}
		missing = append(missing, dl)
	}

	// A failure does not stop the pool (its cancel is a no-op): every layer
	// keeps downloading until the loop below reaches a failure in layer
	// order and cancels ctx, which is also the pool's stop, so what was
	// verified by then stays for the next attempt.
	finished := make(chan struct{})
	var poolErr error
	waiting := func(dl *layerDownload) error { return po.layer(dl.id, "Waiting") }
	go func() {
		defer close(finished)
		poolErr = eachBounded(ctx, func() {}, bt.maxDownloads, waiting, func(dl *layerDownload, release func()) error {
			defer close(dl.done)
			dl.err = bt.downloadLayer(ctx, src, dst, dl, release, po)
			return dl.err
		}, missing)
	}()

	var firstErr error
	for _, dl := range dls {
		select {
		case <-dl.done:
		case <-finished: // dl may never have started
		}
		if firstErr != nil || dl.present {
			continue
		}
		select {
		case <-dl.done:
		default:
			// Never started: its wait for a slot failed ("Waiting" could
			// not be written) or ended with ctx; poolErr says which.
			firstErr = poolErr
			cancel()
			continue
		}
		if dl.err != nil {
			firstErr = dl.err
			cancel()
			continue
		}
		if err := po.layer(dl.id, "Pull complete"); err != nil {
			firstErr = err
			cancel()
		}
	}
	<-finished
	return firstErr
}

// downloadLayer shares the download of the blob with any concurrent pull
// that wants the same digest. release gives its pool slot back.
func (bt *blobTransfers) downloadLayer(ctx context.Context, src blobFetcher, dst blobIngester, dl *layerDownload, release func(), po *progressOutput) error {
	// The slot bounds downloads, not commits: it is given back as soon as
	// the body is read whole, so the next layer downloads while this one's
	// last pages are written out and fsynced (Ingestion.Commit). Without
	// that, every slot sat idle for the length of an fsync per layer.
	if err := bt.sharedFetch(ctx, src, dst, dl.desc, dl.id, po, release); err != nil {
		return err
	}
	return po.layer(dl.id, "Download complete")
}

// sharedFetch stores desc once however many pulls ask for it at the same
// time. The first asker downloads under its own context and credentials and
// sees byte progress; the others wait. A waiter does not inherit the first
// asker's failure blindly: that pull may have been cancelled, or may have
// used another repository or credentials, so a waiter whose own context is
// live tries again (any number of times after a cancellation, once after
// another failure).
//
// downloaded is called once the leader has read the whole body.
func (bt *blobTransfers) sharedFetch(ctx context.Context, src blobFetcher, dst blobIngester, desc ocispec.Descriptor, id string, po *progressOutput, downloaded func()) error {
	retried := false
	for {
		leader := false
		ch := bt.downloads.DoChan(desc.Digest.String(), func() (any, error) {
			leader = true
			ix := newPullIndex(ctx, bt.indexer, desc)
			err := fetchBlobInto(ctx, bt.countPulled(src), dst, desc, id, po, downloaded, ix)
			ix.done(err)
			return nil, err
		})
		if bt.flightJoined != nil {
			bt.flightJoined(desc.Digest.String())
		}
		var err error
		select {
		case res := <-ch:
			err = res.Err
		case <-ctx.Done():
			return ctx.Err()
		}
		if err == nil || leader || ctx.Err() != nil {
			return err
		}
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			if retried {
				return err
			}
			retried = true
		}
	}
}

// fetchBlobInto streams one blob from the registry into the store; it is
// never held in memory whole. downloaded (may be nil) is called when the
// body is exhausted, before the store verifies and commits the blob. ix
// sees the bytes of an attempt from byte 0 (pull_index.go).
func fetchBlobInto(ctx context.Context, src blobFetcher, dst blobIngester, desc ocispec.Descriptor, id string, po *progressOutput, downloaded func(), ix *pullIndex) error {
	if dst.HasBlob(desc.Digest) {
		return nil // a pull that finished just before us stored it
	}
	progress := func(rc io.Reader, from int64) *progressReader {
		pr := newProgressReader(ix.from(from, rc), po, id, "Downloading", desc.Size)
		// From the bytes a failed download kept: the bar never goes back.
		pr.current, pr.lastBytes = from, from
		pr.onEOF = func() {
			_ = po.layer(id, "Verifying Checksum")
			if downloaded != nil {
				downloaded()
			}
		}
		return pr
	}
	if rf, ok := src.(rangeFetcher); ok {
		return dst.WriteBlob(ctx, desc, nil, store.Resumable(func(have io.Reader, n int64) (io.ReadCloser, error) {
			rc, err := rf.FetchBlobFrom(ctx, desc, have, n)
			if err != nil {
				return nil, err
			}
			return readCloser{progress(rc, n), rc}, nil
		}, keepPartial))
	}
	rc, err := src.FetchBlob(ctx, desc)
	if err != nil {
		return err
	}
	defer rc.Close()
	pr := progress(rc, 0)
	// Verified once: by the registry client's reader when it says it checks
	// this very digest, and the store then only checks the size; else by
	// the store.
	if v, ok := rc.(digestVerifier); ok && v.VerifiedDigest() == desc.Digest {
		return dst.WriteBlob(ctx, desc, pr, store.Verified())
	}
	return dst.WriteBlob(ctx, desc, pr)
}

// keepPartial: a failed download keeps its bytes for the next pull unless
// they are proven wrong — a digest or size mismatch, or an answer that
// contradicts itself (ErrUpstream: a Content-Range elsewhere) — so a
// registry serving bad bytes costs one wasted download, not one per pull.
func keepPartial(err error) bool {
	return !errdefs.IsDataLoss(err) && !errdefs.IsInvalidArgument(err) && !errors.Is(err, registry.ErrUpstream)
}

type readCloser struct {
	io.Reader
	io.Closer
}

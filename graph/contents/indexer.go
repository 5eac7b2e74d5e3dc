package contents

import (
	"context"
	"errors"
	"io"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/contents/indexcache"
	"github.com/wharfproject/wharf/internal/layerindex"
)

var errPullAborted = errors.New("the pull's download of the layer failed")

// IndexLayer builds the index of a layer a pull downloads, in the same pass
// (graph/distribution's LayerIndexer): the pull writes the compressed bytes
// to w as it stores them, then calls commit once the blob's digest is
// verified, or abort. The build runs beside the pull through a pipe; if it
// fails (a layer over a limit, not a tar), w keeps accepting and drops the
// bytes, so the pull never waits on it nor fails because of it. Nothing is
// kept unless commit is called. A layer already indexed is not wanted (w
// nil).
func (r *Room) IndexLayer(ctx context.Context, desc ocispec.Descriptor) (io.Writer, func() error, func()) {
	if r.cache.Has(desc.Digest) {
		return nil, nil, nil
	}
	pr, pw := io.Pipe()
	type result struct {
		ld  *layerData
		err error
	}
	done := make(chan result, 1)
	go func() {
		ld, _, err := buildStream(context.WithoutCancel(ctx), pr, desc, r.lim, layerindex.Keep{})
		if err != nil {
			// A failed build stops reading: later writes return at once
			// and the writer drops them.
			pr.CloseWithError(err)
		}
		done <- result{ld, err}
	}()
	w := &dropWriter{pw: pw}
	commit := func() error {
		pw.Close()
		res := <-done
		if res.err != nil || w.failed {
			return nil // the pull succeeded; the index is built on demand later
		}
		res.ld.ix.Layer = desc.Digest
		res.ld.ix.Source = layerindex.SourceLayer
		if err := r.cache.Put(&indexcache.Entry{Index: res.ld.ix, Gzip: res.ld.gz}); err != nil {
			return err
		}
		r.obs.IndexBuilt(res.ld.ix.Source.String())
		r.layers.add(desc.Digest.String(), res.ld, res.ld.cost())
		return nil
	}
	abort := func() {
		pw.CloseWithError(errPullAborted)
		<-done
	}
	return w, commit, abort
}

// dropWriter writes into the build's pipe until the build fails, then
// accepts and drops everything.
type dropWriter struct {
	pw     *io.PipeWriter
	failed bool
}

func (d *dropWriter) Write(p []byte) (int, error) {
	if !d.failed {
		if _, err := d.pw.Write(p); err != nil {
			d.failed = true
		}
	}
	return len(p), nil
}

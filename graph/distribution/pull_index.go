package distribution

import (
	"context"
	"io"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// pullIndex hands the bytes of one layer download to the LayerIndexer as
// they are written to the store, so the layer's index is built in the
// pull's own pass. Only a download from the blob's first byte is indexed:
// one that resumes from kept bytes (offset > 0) does not see them, and a
// blob already stored is not downloaded at all. The indexer never fails the
// pull: a write error of its writer stops feeding it, and it is aborted.
type pullIndex struct {
	ix   LayerIndexer // nil: no indexing
	ctx  context.Context
	desc ocispec.Descriptor

	w      io.Writer // nil: no session (resumed, or not wanted)
	commit func() error
	abort  func()
	failed bool
}

func newPullIndex(ctx context.Context, ix LayerIndexer, desc ocispec.Descriptor) *pullIndex {
	return &pullIndex{ix: ix, ctx: ctx, desc: desc}
}

// from is called for each attempt of the download with its starting
// offset and reader: an attempt from 0 starts a fresh session (the store
// may retry from 0 after a resumed attempt failed), any other none.
func (p *pullIndex) from(off int64, r io.Reader) io.Reader {
	p.drop()
	if p.ix == nil || off != 0 {
		return r
	}
	w, commit, abort := p.ix.IndexLayer(p.ctx, p.desc)
	if w == nil {
		if abort != nil {
			abort()
		}
		return r
	}
	p.w, p.commit, p.abort, p.failed = w, commit, abort, false
	return &indexTee{r: r, p: p}
}

// done ends the session: commit once the blob is verified and stored (err
// nil), abort otherwise. The commit's own error is the index's, not the
// pull's: the layer is stored either way, and the index is built again
// from it when asked.
func (p *pullIndex) done(err error) {
	if p.w == nil {
		return
	}
	if err != nil || p.failed || p.commit == nil {
		p.drop()
		return
	}
	commit := p.commit
	p.w, p.commit, p.abort = nil, nil, nil
	_ = commit()
}

// drop aborts a session in progress.
func (p *pullIndex) drop() {
	if p.w != nil && p.abort != nil {
		p.abort()
	}
	p.w, p.commit, p.abort = nil, nil, nil
}

// indexTee passes r's bytes through and copies them to the session's
// writer while it accepts them.
type indexTee struct {
	r io.Reader
	p *pullIndex
}

func (t *indexTee) Read(b []byte) (int, error) {
	n, err := t.r.Read(b)
	if n > 0 && !t.p.failed && t.p.w != nil {
		if _, werr := t.p.w.Write(b[:n]); werr != nil {
			t.p.failed = true
		}
	}
	return n, err
}

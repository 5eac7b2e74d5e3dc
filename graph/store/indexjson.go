package store

// index.json, the OCI layout's index, is derived from the records. It is no
// longer rewritten by every change (that made a tag cost O(n) at any
// store size): a change marks it behind, and a background writer rewrites
// it at most once per IndexDelay, from one read transaction, atomically
// (temp file, fsync, rename, fsync of the root). Close writes it too, so a
// stopped daemon leaves a layout any OCI tool reads whole; `wharf system
// check` writes it when it is behind before it compares. meta.indexgen
// records the change generation (meta.gen) the file on disk was written
// at: a start-up finding them equal does not rewrite it; one finding it
// behind (a crash within IndexDelay of a change) rewrites it in the
// background, not on the start-up path.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/internal/ocilayout"
)

// IndexDelay is how long after a change index.json is rewritten: changes
// within it share one write.
const IndexDelay = time.Second

// writeIndex writes the index.json the records of v call for to w, an
// entry at a time (ocilayout.IndexWriter).
func (s *Store) writeIndex(w io.Writer, v dbView) error {
	iw, err := ocilayout.NewIndexWriter(w)
	if err != nil {
		return err
	}
	put := iw.Add
	// Only the fields index.json shows are decoded of each record.
	var r struct {
		Target, Manifest ocispec.Descriptor
		RepoTags         []string
	}
	err = v.tx.Bucket(bucketImages).ForEach(func(k, b []byte) error {
		s.scanned(v.tx, len(k)+len(b))
		r.Target, r.Manifest, r.RepoTags = ocispec.Descriptor{}, ocispec.Descriptor{}, nil
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("graph: image record %s: %w", k, err)
		}
		target := r.Target
		if target.Digest == "" {
			target = r.Manifest
		}
		target.Annotations = nil
		target.Data = nil
		if len(r.RepoTags) == 0 {
			return put(target)
		}
		for _, t := range r.RepoTags {
			d := target
			tag := t
			if i := strings.LastIndex(t, ":"); i > strings.LastIndex(t, "/") {
				tag = t[i+1:]
			}
			d.Annotations = map[string]string{AnnRefName: tag, AnnImageName: t}
			if err := put(d); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return iw.Close()
}

// indexBytes is writeIndex into memory (the check's detailed comparison,
// only when the file differs).
func (s *Store) indexBytes(v dbView) ([]byte, error) {
	var b bytes.Buffer
	if err := s.writeIndex(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// indexWriteShare bounds the CPU the background writer takes: the delay
// before a rewrite is at least indexWriteShare times the last write's
// duration (one write in ten seconds of changes at 50,000 images, where a
// write takes ~0.5 s, instead of one a second: it was two thirds of the
// daemon's CPU under a stream of tags). maxIndexDelay caps the delay.
const (
	indexWriteShare = 10
	maxIndexDelay   = 30 * time.Second
)

// indexDelayNow is the delay before the next background write.
func (s *Store) indexDelayNow() time.Duration {
	d := s.indexDelay
	if c := indexWriteShare * time.Duration(s.idxCost.Load()); c > d {
		d = min(c, maxIndexDelay)
	}
	return d
}

// indexChanged schedules a rewrite of index.json IndexDelay from now (or
// later, in a large store: indexDelayNow), unless one is scheduled
// already.
func (s *Store) indexChanged() {
	s.idxSchedMu.Lock()
	defer s.idxSchedMu.Unlock()
	if s.idxTimer != nil || s.closed {
		return
	}
	s.idxTimer = time.AfterFunc(s.indexDelayNow(), func() {
		s.idxSchedMu.Lock()
		s.idxTimer = nil
		s.idxSchedMu.Unlock()
		if err := s.FlushIndex(); err != nil && !errors.Is(err, errClosed) {
			s.log.WithError(err).Warn("index.json not updated; retrying")
			s.indexChanged()
		}
	})
}

var errClosed = errors.New("graph: store closed")

// FlushIndex writes index.json now if it is behind the records (Close
// calls it; so will `wharf system export-index`). It holds idxMu across a
// write transaction: nobody may wait for idxMu inside a read transaction
// (the write may wait for every read transaction to end, to remap).
func (s *Store) FlushIndex() error {
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if s.dbClosed {
		return errClosed
	}
	var gen, stored uint64
	// The file is written from inside the read transaction, an entry at
	// a time: the transaction lasts as long as the write (~0.3 s at
	// 50,000 images), which delays no writer (bbolt's writers wait for
	// readers only to grow the file's mapping).
	err := s.db.View(func(btx *bolt.Tx) error {
		v := dbView{btx}
		gen, stored = v.gen(), u64(btx.Bucket(bucketMeta).Get(keyIndexGen))
		if gen == s.idxGen {
			if _, err := os.Stat(filepath.Join(s.root, IndexFile)); err == nil {
				return nil
			}
		}
		t := time.Now()
		if err := s.writeFileAtomicFunc(s.root, IndexFile, func(w io.Writer) error { return s.writeIndex(w, v) }); err != nil {
			return err
		}
		s.idxCost.Store(int64(time.Since(t)))
		s.idxGen = gen
		return nil
	})
	if err != nil {
		return err
	}
	if stored == gen {
		return nil
	}
	// Remember it, so that the next start-up does not rewrite it. A crash
	// before this commit only costs that rewrite. (Outside the read
	// transaction: a write one inside it may wait for it on a remap.)
	return s.db.Update(func(btx *bolt.Tx) error {
		return putU64(btx.Bucket(bucketMeta), keyIndexGen, gen)
	})
}

// checkIndex compares index.json with the records of v when it was
// written at v's generation, and writes it from v otherwise. Called with
// leaseMu and idxMu held, from a read transaction.
func (s *Store) checkIndex(v dbView, add func(CheckProblem)) error {
	if v.gen() != s.idxGen {
		if err := s.writeIndexFrom(v); err != nil {
			return err
		}
		return nil
	}
	// The common case, a file written from these records, is settled by
	// hashing both streams; only a difference builds both indexes in
	// memory to name the entries.
	same, err := s.indexFileIs(v)
	if err != nil || same {
		return err
	}
	b, err := s.indexBytes(v)
	if err != nil {
		return err
	}
	var want ocispec.Index
	if err := json.Unmarshal(b, &want); err != nil {
		return err
	}
	s.checkIndexFile(want, add)
	return nil
}

// indexFileIs reports whether index.json holds exactly the bytes writeIndex
// writes from v (a missing or unreadable file is not).
func (s *Store) indexFileIs(v dbView) (bool, error) {
	f, err := os.Open(filepath.Join(s.root, IndexFile))
	if err != nil {
		return false, nil
	}
	defer f.Close()
	fh := sha256.New()
	if _, err := io.Copy(fh, f); err != nil {
		return false, nil
	}
	wh := sha256.New()
	bw := bufio.NewWriterSize(wh, 64<<10)
	if err := s.writeIndex(bw, v); err != nil {
		return false, err
	}
	if err := bw.Flush(); err != nil {
		return false, err
	}
	return bytes.Equal(fh.Sum(nil), wh.Sum(nil)), nil
}

// writeIndexFrom writes index.json from v inside a read transaction (the
// generation is recorded in memory only: a write transaction cannot start
// inside a read one without risking a deadlock on the mmap).
func (s *Store) writeIndexFrom(v dbView) error {
	if err := s.writeFileAtomicFunc(s.root, IndexFile, func(w io.Writer) error { return s.writeIndex(w, v) }); err != nil {
		return err
	}
	s.idxGen = v.gen()
	s.indexChanged() // meta.indexgen is recorded by the next flush
	return nil
}

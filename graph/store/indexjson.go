package store

// index.json is derived from the records (graph/store/indexjson): a change
// marks it behind and the background writer rewrites it. Close writes it
// too, so a stopped daemon leaves a layout any OCI tool reads whole;
// `wharf system check` writes it when it is behind before it compares.
// meta.indexgen records the change generation (meta.gen) the file on disk
// was written at: a start-up finding them equal does not rewrite it; one
// finding it behind (a crash within IndexDelay of a change) rewrites it in
// the background, not on the start-up path.

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/graph/store/indexjson"
)

// IndexDelay is how long after a change index.json is rewritten: changes
// within it share one write.
const IndexDelay = indexjson.IndexDelay

// writeIndex writes the index.json the records of v call for to w.
func (s *Store) writeIndex(w io.Writer, v dbView) error {
	return indexjson.Write(w, v.tx.Bucket(bucketImages), func(n int) { s.scanned(v.tx, n) })
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

var errClosed = indexjson.ErrClosed

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
		s.idxSched.Wrote(time.Since(t))
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
	same, err := indexjson.Same(filepath.Join(s.root, IndexFile), func(w io.Writer) error { return s.writeIndex(w, v) })
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

// writeIndexFrom writes index.json from v inside a read transaction (the
// generation is recorded in memory only: a write transaction cannot start
// inside a read one without risking a deadlock on the mmap).
func (s *Store) writeIndexFrom(v dbView) error {
	if err := s.writeFileAtomicFunc(s.root, IndexFile, func(w io.Writer) error { return s.writeIndex(w, v) }); err != nil {
		return err
	}
	s.idxGen = v.gen()
	s.idxSched.Changed() // meta.indexgen is recorded by the next flush
	return nil
}

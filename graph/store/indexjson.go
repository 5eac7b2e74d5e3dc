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
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	bolt "go.etcd.io/bbolt"
)

// IndexDelay is how long after a change index.json is rewritten: changes
// within it share one write.
const IndexDelay = time.Second

// indexBytes is the index.json the records of v call for (the system check
// compares it with the file).
func indexBytes(v dbView) ([]byte, error) {
	idx := ocispec.Index{
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{},
	}
	idx.SchemaVersion = 2
	err := v.forEachImage(func(r *ImageRecord) error {
		target := r.Target
		if target.Digest == "" {
			target = r.Manifest
		}
		target.Annotations = nil
		target.Data = nil
		if len(r.RepoTags) == 0 {
			idx.Manifests = append(idx.Manifests, target)
			return nil
		}
		for _, t := range r.RepoTags {
			d := target
			tag := t
			if i := strings.LastIndex(t, ":"); i > strings.LastIndex(t, "/") {
				tag = t[i+1:]
			}
			d.Annotations = map[string]string{AnnRefName: tag, AnnImageName: t}
			idx.Manifests = append(idx.Manifests, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(idx)
}

// indexChanged schedules a rewrite of index.json IndexDelay from now,
// unless one is scheduled already.
func (s *Store) indexChanged() {
	s.idxSchedMu.Lock()
	defer s.idxSchedMu.Unlock()
	if s.idxTimer != nil || s.closed {
		return
	}
	s.idxTimer = time.AfterFunc(s.indexDelay, func() {
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
	var b []byte
	err := s.db.View(func(btx *bolt.Tx) error {
		v := dbView{btx}
		gen, stored = v.gen(), u64(btx.Bucket(bucketMeta).Get(keyIndexGen))
		if gen == s.idxGen {
			if _, err := os.Stat(filepath.Join(s.root, IndexFile)); err == nil {
				return nil
			}
		}
		var err error
		b, err = indexBytes(v)
		return err
	})
	if err != nil {
		return err
	}
	if b != nil {
		if err := s.writeFileAtomic(s.root, IndexFile, b); err != nil {
			return err
		}
		s.idxGen = gen
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
	b, err := indexBytes(v)
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
	b, err := indexBytes(v)
	if err != nil {
		return err
	}
	if err := s.writeFileAtomic(s.root, IndexFile, b); err != nil {
		return err
	}
	s.idxGen = v.gen()
	s.indexChanged() // meta.indexgen is recorded by the next flush
	return nil
}

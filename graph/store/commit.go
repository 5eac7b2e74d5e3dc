package store

// Group commit. Concurrent changes (64 tags of distinct images) share one
// bbolt write transaction and so one fsync, as bbolt's own Batch does; but
// where db.Batch may call a function several times (it retries the others
// when one fails), a change here runs exactly once: each runs on its own
// overlay (Txn) in the shared transaction, a failing one leaves nothing in
// it, and a succeeding one is written in before the next runs. The first
// caller to find no commit under way commits its batch and whatever
// queued meanwhile; a caller never waits for more than the commit under
// way and its own.

import (
	"fmt"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/graph/store/content"
)

// maxBatch bounds the changes committed in one transaction.
const maxBatch = 256

type commitReq struct {
	fn   func(*Txn) error
	tx   *Txn
	err  error
	done chan struct{}
}

// commit runs fn as one change and returns it once it is durable (or
// failed: then nothing of it was written).
func (s *Store) commit(fn func(*Txn) error) (*Txn, error) {
	req := &commitReq{fn: fn, done: make(chan struct{})}
	s.qMu.Lock()
	s.queue = append(s.queue, req)
	lead := !s.committing
	s.committing = true
	s.qMu.Unlock()
	if lead {
		s.commitRound()
		s.qMu.Lock()
		more := len(s.queue) > 0
		if !more {
			s.committing = false
		}
		s.qMu.Unlock()
		if more {
			go s.commitLoop() // the rest is not this caller's to wait for
		}
	}
	<-req.done
	return req.tx, req.err
}

func (s *Store) commitLoop() {
	for {
		s.commitRound()
		s.qMu.Lock()
		if len(s.queue) == 0 {
			s.committing = false
			s.qMu.Unlock()
			return
		}
		s.qMu.Unlock()
	}
}

// commitRound commits the queued changes (up to maxBatch) in one
// transaction.
func (s *Store) commitRound() {
	s.qMu.Lock()
	batch := s.queue
	if len(batch) > maxBatch {
		batch, s.queue = batch[:maxBatch:maxBatch], batch[maxBatch:]
	} else {
		s.queue = nil
	}
	s.qMu.Unlock()
	s.runBatch(batch)
	for _, r := range batch {
		close(r.done)
	}
}

func (s *Store) runBatch(batch []*commitReq) {
	failAll := func(reqs []*commitReq, err error) {
		for _, r := range reqs {
			r.tx, r.err = nil, fmt.Errorf("save image records: %w", err)
		}
	}
	btx, err := s.db.Begin(true)
	if err != nil {
		failAll(batch, err)
		return
	}
	var ok []*commitReq
	var delta int64
	for _, r := range batch {
		tx := newTxn(s, btx)
		if err := safeCall(r.fn, tx); err != nil {
			r.err = err // fn's own failure: its overlay is dropped
			continue
		}
		if err := tx.apply(); err != nil {
			// Part of this change may be in the transaction: none of the
			// batch is committed.
			btx.Rollback()
			failAll(batch, err)
			return
		}
		r.tx = tx
		delta += tx.count
		ok = append(ok, r)
	}
	if len(ok) == 0 {
		btx.Rollback()
		return
	}
	meta := btx.Bucket(bucketMeta)
	gen := u64(meta.Get(keyGen)) + 1
	err = putU64(meta, keyGen, gen)
	if err == nil {
		// Txn.apply kept the summaries and labels with the records.
		err = putIndexGens(meta, gen)
	}
	if err == nil {
		err = putU64(meta, keyCount, uint64(int64(u64(meta.Get(keyCount)))+delta))
	}
	// A record is durable only after the blobs it names are: the renames
	// into blobs/ since the last change are fsynced first.
	if err == nil {
		err = s.blobs.Pending.Sync()
	}
	if err == nil && s.failWrite != nil {
		err = s.failWrite(dbFile)
	}
	// On a full disk bbolt could often commit into pages it has already
	// (then the change would succeed where index.json, and everything
	// else, cannot be written). As before meta.db, a change on a data-root
	// without a free block fails with ENOSPC and changes nothing. bbolt's
	// own ENOSPC, when it needs a new block, rolls the transaction back.
	if err == nil {
		err = content.DiskFull(filepath.Join(s.root, wharfDir))
	}
	if err != nil {
		btx.Rollback()
		failAll(ok, err)
		return
	}
	if err := btx.Commit(); err != nil {
		failAll(ok, err)
		return
	}
	s.count.Add(delta)
	s.commits.Add(1)
	s.changes.Add(int64(len(ok)))
	s.idxSched.Changed()
}

// Commits reports the write transactions committed for changes since the
// store opened and the changes they held: their ratio is the group
// commit's batch size (wharf_store_commits_total, _changes_total).
func (s *Store) Commits() (commits, changes int64) {
	return s.commits.Load(), s.changes.Load()
}

func safeCall(fn func(*Txn) error, tx *Txn) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in records change: %v", p)
		}
	}()
	return fn(tx)
}

// collect removes those of candidates that no record and no live lease
// uses, and returns the bytes freed.
func (s *Store) collect(candidates []digest.Digest) int64 {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	return s.collectLocked(candidates)
}

// collectLocked is collect with leaseMu held. The read transaction starts
// under leaseMu: a record committed before it is seen, and one committed
// after it was put by an operation whose lease pinned its blobs before it
// checked them (Put), which this lock orders before or after the unlinks
// (after: Put finds the blob gone and fails).
func (s *Store) collectLocked(candidates []digest.Digest) int64 {
	if len(candidates) == 0 {
		return 0
	}
	var dead []digest.Digest
	seen := map[digest.Digest]bool{}
	err := s.db.View(func(btx *bolt.Tx) error {
		v := dbView{btx}
		for _, d := range candidates {
			if d == "" || seen[d] || s.pins[d] > 0 {
				continue
			}
			seen[d] = true
			if !v.used(d) {
				dead = append(dead, d)
			}
		}
		return nil
	})
	if err != nil {
		s.log.WithError(err).Warn("collect unreferenced blobs")
		return 0
	}
	var freed int64
	for _, d := range dead {
		n, err := s.removeBlob(d)
		if err != nil {
			s.log.WithError(err).WithField("digest", d).Warn("remove unreferenced blob")
			continue
		}
		// The metadata cache holds one entry per manifest: dropping it with
		// the blob keeps the cache no larger than the store.
		s.forget(d)
		freed += n
	}
	return freed
}

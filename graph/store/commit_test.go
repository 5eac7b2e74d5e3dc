package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
)

// TestConcurrentTagsShareOneCommit: 64 concurrent tags of distinct images
// are committed in two transactions (the one under way when they arrive,
// and one for all the rest), not 64; a change whose fn fails among them
// leaves nothing and the others commit.
func TestConcurrentTagsShareOneCommit(t *testing.T) {
	s := quietIndexStore(t)
	const n = 64
	ids := make([]digest.Digest, n)
	fillRecords(s, n, nil)
	for i := range ids {
		ids[i] = digest.FromString(string(bytes.Repeat([]byte("i"), i+1)))
	}
	// Hold the first commit until every other change has queued.
	release := make(chan struct{})
	var once sync.Once
	s.failWrite = func(name string) error {
		if name == dbFile {
			once.Do(func() { <-release })
		}
		return nil
	}
	before := s.commits.Load()
	errFail := errors.New("fails")
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = s.Update(false, func(tx *Txn) error {
				if err := tx.PointRef(fmt.Sprintf("docker.io/library/t%d:1", i), ids[i]); err != nil {
					return err
				}
				if i%10 == 5 {
					return errFail // its tag must not be committed
				}
				return nil
			})
		}(i)
		if i == 0 {
			// The first is the leader: wait until it holds its commit.
			if !queueWithin(s, 30*time.Second, func(committing bool, queued int) bool { return committing && queued == 0 }) {
				close(release)
				t.Fatal("the first change never held its commit")
			}
		}
	}
	if !queueWithin(s, 30*time.Second, func(_ bool, queued int) bool { return queued == n-1 }) {
		close(release)
		t.Fatalf("the other %d changes never all queued", n-1)
	}
	close(release)
	wg.Wait()
	if got := s.commits.Load() - before; got != 2 {
		t.Fatalf("%d concurrent tags took %d commits, want 2", n, got)
	}
	for i := 0; i < n; i++ {
		_, err := s.Lookup(fmt.Sprintf("t%d:1", i))
		if i%10 == 5 {
			if !errors.Is(errs[i], errFail) || err == nil {
				t.Errorf("tag %d: Update = %v, lookup = %v; want its error and no tag", i, errs[i], err)
			}
			continue
		}
		if errs[i] != nil || err != nil {
			t.Errorf("tag %d: Update = %v, lookup = %v", i, errs[i], err)
		}
	}
}

// queueWithin polls the commit queue until cond holds of it, for at most
// timeout; false when it never did.
func queueWithin(s *Store, timeout time.Duration, cond func(committing bool, queued int) bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		s.qMu.Lock()
		ok := cond(s.committing, len(s.queue))
		s.qMu.Unlock()
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// TestIndexWrittenInBackground: index.json catches up with the records
// without Close, IndexDelay after a change.
func TestIndexWrittenInBackground(t *testing.T) {
	root := t.TempDir()
	s, err := Open(t.Context(), Options{Root: root, Logger: quietLogger(), IndexDelay: 10 * time.Millisecond})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	rec := putTagged(t, s, "bg:1", "bg")
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(root, IndexFile))
		if bytes.Contains(b, []byte(rec.Manifest.Digest)) && bytes.Contains(b, []byte("docker.io/library/bg:1")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("index.json not written in the background: %s", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestIndexWriteFailureFailsNoChange: index.json is derived: a full disk
// when it is written fails no change, leaves the old file whole, and the
// file catches up once there is room.
func TestIndexWriteFailureFailsNoChange(t *testing.T) {
	s := newTestStore(t)
	putTagged(t, s, "a:1", "a")
	must(t, s.FlushIndex())
	old, err := os.ReadFile(filepath.Join(s.root, IndexFile))
	must(t, err)
	s.idxMu.Lock() // the background writer reads failWrite under idxMu
	s.failWrite = func(name string) error {
		if name == IndexFile {
			return syscall.ENOSPC
		}
		return nil
	}
	s.idxMu.Unlock()
	putTagged(t, s, "b:1", "b")
	if err := s.FlushIndex(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("FlushIndex on a full disk: %v", err)
	}
	now, err := os.ReadFile(filepath.Join(s.root, IndexFile))
	must(t, err)
	if !bytes.Equal(old, now) {
		t.Fatal("a failed index.json write changed it")
	}
	if _, err := s.Lookup("b:1"); err != nil {
		t.Fatal(err)
	}
	s.idxMu.Lock()
	s.failWrite = nil
	s.idxMu.Unlock()
	checkClean(t, s) // writes it: it is behind
	must(t, s.FlushIndex())
	now, _ = os.ReadFile(filepath.Join(s.root, IndexFile))
	if !bytes.Contains(now, []byte("docker.io/library/b:1")) {
		t.Fatalf("index.json after the disk has room: %s", now)
	}
}

// TestReadersDoNotWaitForACommit: while a change is held just before its
// commit (its fsync), Lookup, Snapshot, Count and ImagesByRepository answer
// from the last committed state, without waiting.
func TestReadersDoNotWaitForACommit(t *testing.T) {
	s := quietIndexStore(t)
	a := putTagged(t, s, "a:1", "a")
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.failWrite = func(name string) error {
		if name == dbFile {
			once.Do(func() { close(held); <-release })
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Update(false, func(tx *Txn) error { return tx.PointRef("docker.io/library/a:2", a.ID) })
		done <- err
	}()
	<-held
	read := make(chan error, 1)
	go func() {
		if _, err := s.Lookup("a:1"); err != nil {
			read <- err
			return
		}
		if _, err := s.Lookup("a:2"); err == nil {
			read <- fmt.Errorf("an uncommitted tag is visible")
			return
		}
		if len(s.Snapshot()) != 1 || s.Count() != 1 {
			read <- fmt.Errorf("snapshot/count during a commit")
			return
		}
		_, err := s.ImagesByRepository("a")
		read <- err
	}()
	select {
	case err := <-read:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a reader waited for a commit")
	}
	close(release)
	must(t, <-done)
	if _, err := s.Lookup("a:2"); err != nil {
		t.Fatal(err)
	}
}

// quietIndexStore is a test store whose background index.json writer does
// not run during the test (it would read failWrite, which the test sets).
func quietIndexStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), Options{Root: t.TempDir(), Logger: quietLogger(), IndexDelay: time.Hour})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

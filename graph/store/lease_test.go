package store

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
)

// TestLeasePinsBlobsAcrossDelete: a blob pinned by a live lease survives an
// Update that deletes the only image using it, and is collected when the
// lease is released (and not before the last of several leases goes).
func TestLeasePinsBlobsAcrossDelete(t *testing.T) {
	tests := []struct {
		name string
		// pin pins some of rec's blobs in lease and returns them.
		pin    func(t *testing.T, s *Store, lease *Lease, rec *ImageRecord) []digest.Digest
		leases int
	}{
		{"Add", func(t *testing.T, s *Store, l *Lease, rec *ImageRecord) []digest.Digest {
			l.Add(rec.Manifest.Digest, rec.ID)
			return []digest.Digest{rec.Manifest.Digest, rec.ID}
		}, 1},
		{"Has", func(t *testing.T, s *Store, l *Lease, rec *ImageRecord) []digest.Digest {
			m, err := s.Meta(rec)
			must(t, err)
			d := m.Manifest.Layers[0].Digest
			if !l.Has(d) {
				t.Fatal("Has: stored layer not found")
			}
			return []digest.Digest{d}
		}, 1},
		{"AddImage", func(t *testing.T, s *Store, l *Lease, rec *ImageRecord) []digest.Digest {
			l.AddImage(rec)
			return s.blobsOf(rec)
		}, 1},
		{"WriteBlob of an existing blob", func(t *testing.T, s *Store, l *Lease, rec *ImageRecord) []digest.Digest {
			b, err := s.ReadBlob(rec.ID, MaxConfigSize)
			must(t, err)
			if _, created := writeTestBlob(t, l, "", b); created {
				t.Fatal("WriteBlob of a stored blob says created")
			}
			return []digest.Digest{rec.ID}
		}, 1},
		{"two leases", func(t *testing.T, s *Store, l *Lease, rec *ImageRecord) []digest.Digest {
			l.AddImage(rec)
			return s.blobsOf(rec)
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			rec := putTagged(t, s, "only:1", "only")
			keep := putTagged(t, s, "keep:1", "keep")
			var leases []*Lease
			var pinned []digest.Digest
			for i := 0; i < tt.leases; i++ {
				l := s.NewLease()
				leases = append(leases, l)
				pinned = tt.pin(t, s, l, rec)
			}
			isPinned := map[digest.Digest]bool{}
			for _, d := range pinned {
				isPinned[d] = true
			}
			all := s.blobsOf(rec)
			deleteImage(t, s, "only:1", true)
			for _, d := range all {
				if got := s.HasBlob(d); got != isPinned[d] {
					t.Fatalf("after delete: blob %s stored = %v, pinned = %v", d, got, isPinned[d])
				}
			}
			// A pinned blob is no orphan while the lease lives.
			if o, err := s.Orphans(context.Background()); err != nil || len(o) != 0 {
				t.Fatalf("Orphans with live leases = %v, %v", o, err)
			}
			for i, l := range leases {
				freed := l.Release()
				last := i == len(leases)-1
				if (freed > 0) != last {
					t.Fatalf("release %d of %d freed %d bytes", i+1, len(leases), freed)
				}
				for _, d := range pinned {
					if s.HasBlob(d) == last {
						t.Fatalf("release %d of %d: blob %s stored = %v", i+1, len(leases), d, !last)
					}
				}
				if l.Release() != 0 {
					t.Fatal("second Release freed bytes")
				}
			}
			// keep's blobs were never candidates.
			for _, d := range s.blobsOf(keep) {
				if !s.HasBlob(d) {
					t.Fatalf("blob %s of a kept image collected", d)
				}
			}
			checkClean(t, s)
		})
	}
}

// TestReleaseCollectsOnlyUnusedBlobs: a failed operation (no Put) leaves no
// blob behind, except those a record or another lease uses.
func TestReleaseCollectsOnlyUnusedBlobs(t *testing.T) {
	s := newTestStore(t)
	rec := putTagged(t, s, "a:1", "shared")
	other := s.NewLease()
	defer other.Release()
	otherBlob, err := writeJSON(other, "application/json", "other's")
	must(t, err)

	lease := s.NewLease()
	failed := writeTestImage(t, lease, testImage{layers: []string{"shared", "mine"}})
	extra, err := writeJSON(lease, "application/json", "other's") // pinned by both
	must(t, err)
	if extra.Digest != otherBlob.Digest {
		t.Fatal("test blobs differ")
	}
	fm, err := s.Meta(&failed)
	must(t, err)
	lease.Release()
	rm, err := s.Meta(rec)
	must(t, err)
	if !s.HasBlob(rm.Manifest.Layers[0].Digest) || rm.Manifest.Layers[0].Digest != fm.Manifest.Layers[0].Digest {
		t.Fatal("the shared layer was collected")
	}
	if !s.HasBlob(otherBlob.Digest) {
		t.Fatal("a blob another lease pins was collected")
	}
	for _, d := range []digest.Digest{failed.ID, failed.Manifest.Digest, fm.Manifest.Layers[1].Digest} {
		if s.HasBlob(d) {
			t.Fatalf("blob %s of the failed operation survived Release", d)
		}
	}
	// A released lease pins nothing new.
	lease.Add(rec.ID)
	deleteImage(t, s, "a:1", true)
	if s.HasBlob(rec.ID) {
		t.Fatal("a released lease pinned a blob")
	}
}

// TestIngestAbortAndCommit: an aborted ingestion leaves no file; a committed
// one is pinned by its lease until Release.
func TestIngestAbortAndCommit(t *testing.T) {
	s := newTestStore(t)
	lease := s.NewLease()
	w, err := lease.Ingest("")
	must(t, err)
	fmt.Fprint(w, "aborted")
	w.Abort()
	w.Abort()
	w, err = lease.Ingest(digest.SHA256)
	must(t, err)
	fmt.Fprint(w, "committed")
	if w.Size() != 9 || w.Digest() != digest.FromString("committed") {
		t.Fatalf("size %d digest %s", w.Size(), w.Digest())
	}
	if _, _, err := w.Commit(8, ""); err == nil {
		t.Fatal("Commit with a wrong size succeeded")
	}
	w.Abort()
	w, err = lease.Ingest(digest.SHA256)
	must(t, err)
	fmt.Fprint(w, "committed")
	d, created, err := w.Commit(9, digest.FromString("committed"))
	must(t, err)
	w.Abort() // after Commit: a no-op
	if !created || !s.HasBlob(d) {
		t.Fatalf("Commit: created=%v stored=%v", created, s.HasBlob(d))
	}
	if n, _, err := s.CollectAll(context.Background()); err != nil || n != 0 || !s.HasBlob(d) {
		t.Fatalf("CollectAll took a leased blob: %d %v", n, err)
	}
	if ents := ingestFiles(t, s); len(ents) != 0 {
		t.Fatalf("ingest area: %v", ents)
	}
	lease.Release()
	if s.HasBlob(d) {
		t.Fatal("unused blob survived Release")
	}
}

// TestCollectAllSparesLiveIngestions: CollectAll (prune) removes ingest
// files no ingestion owns, never one being written.
func TestCollectAllSparesLiveIngestions(t *testing.T) {
	s := newTestStore(t)
	lease := s.NewLease()
	defer lease.Release()
	w, err := lease.Ingest(digest.SHA256)
	must(t, err)
	defer w.Abort()
	fmt.Fprint(w, "partial")
	writeFile(t, s.root, ingestDir+"/blob-left-by-a-crash", "x", 0o600)
	if _, _, err := s.CollectAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	ents := ingestFiles(t, s)
	if len(ents) != 1 || ents[0] == "blob-left-by-a-crash" {
		t.Fatalf("ingest area after CollectAll: %v", ents)
	}
	fmt.Fprint(w, " and more")
	if _, _, err := w.Commit(-1, digest.FromString("partial and more")); err != nil {
		t.Fatalf("Commit after CollectAll: %v", err)
	}
}

// TestConcurrentPutAndDeleteSharingBlobs races an operation that stores an
// image (lease, write or find its blobs, Put, Release) against an Update
// that deletes another image sharing those blobs, many rounds: no round
// may lose a blob that a record names, and nothing is left over.
func TestConcurrentPutAndDeleteSharingBlobs(t *testing.T) {
	s := newTestStore(t)
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	for i := 0; i < rounds; i++ {
		shared := fmt.Sprintf("shared %d", i)
		old := putTestImage(t, s, testImage{tags: []string{"old:1"}, layers: []string{shared, "base"}})
		var wg sync.WaitGroup
		var putErr, delErr error
		var rec ImageRecord
		wg.Add(2)
		go func() {
			defer wg.Done()
			lease := s.NewLease()
			defer lease.Release()
			// Same layers as old: WriteBlob finds them stored (or not,
			// when the delete came first) and pins them either way.
			rec, putErr = writeImage(lease, testImage{tags: []string{"new:1"}, layers: []string{shared, "base"}, labels: map[string]string{"round": fmt.Sprint(i)}})
			if putErr == nil {
				putErr = s.Put(lease, rec)
			}
		}()
		go func() {
			defer wg.Done()
			_, delErr = s.Update(true, func(tx *Txn) error { tx.Delete(old.ID); return nil })
		}()
		wg.Wait()
		must(t, putErr)
		must(t, delErr)
		rep := checkClean(t, s)
		if rep.Images != 1 {
			t.Fatalf("round %d: %d images", i, rep.Images)
		}
		for _, d := range s.blobsOf(&rec) {
			if !s.HasBlob(d) {
				t.Fatalf("round %d: blob %s of the new image lost", i, d)
			}
		}
		deleteImage(t, s, "new:1", true)
		if n := len(blobSet(t, s)); n != 0 {
			t.Fatalf("round %d: %d blobs left in an empty store", i, n)
		}
	}
}

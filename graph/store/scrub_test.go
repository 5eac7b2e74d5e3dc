package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestScrubKeepsWhatLeasesPin: the scrub runs while the API serves, so it
// collects under the rules every collection keeps (lease.go): a blob a
// live lease pinned (written by an operation that has not recorded its
// image yet) and a blob being ingested stay; an orphan nothing pins goes.
func TestScrubKeepsWhatLeasesPin(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	orphan := digest.FromString("orphan")
	writeFile(t, root, filepath.Join(BlobsDir, "sha256", orphan.Encoded()), "orphan", 0o600)

	l := s.NewLease()
	defer l.Release()
	pinned := []byte("a layer of a pull under way")
	pd := ocispec.Descriptor{Digest: digest.FromBytes(pinned), Size: int64(len(pinned))}
	if _, err := l.WriteBlob(context.Background(), pd, bytes.NewReader(pinned)); err != nil {
		t.Fatal(err)
	}
	w, err := l.Ingest(digest.SHA256)
	must(t, err)
	defer w.Abort()
	if _, err := w.Write([]byte("half a layer")); err != nil {
		t.Fatal(err)
	}

	rep := s.Scrub(context.Background())
	if rep.Error != "" || rep.CollectedBlobs != 1 || len(rep.Collected) != 1 || rep.Collected[0] != orphan.String() {
		t.Fatalf("scrub: %+v, want the orphan collected and nothing else", rep)
	}
	if !s.HasBlob(pd.Digest) {
		t.Fatal("the scrub collected a blob a live lease pins")
	}
	if len(ingestFiles(t, s)) != 1 {
		t.Fatalf("the scrub removed an ingestion under way: %v", ingestFiles(t, s))
	}
}

// TestCheckWaitsForTheScrub: a check asked while the scrub runs (right
// after StartScrub returns) reports the store after the scrub, and the
// scrub's report; done is called with that report.
func TestCheckWaitsForTheScrub(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	putTestImage(t, s, testImage{tags: []string{"a:1"}, layers: []string{"a"}})
	orphan := digest.FromString("orphan")
	writeFile(t, root, filepath.Join(BlobsDir, "sha256", orphan.Encoded()), "orphan", 0o600)

	reported := make(chan *ScrubReport, 1)
	s.StartScrub(func(rep *ScrubReport) { reported <- rep })
	s.StartScrub(func(*ScrubReport) { t.Error("a second scrub started while one ran") })
	rep, err := s.Check(context.Background(), false)
	must(t, err)
	if rep.UnreferencedBlobs != 0 || len(rep.Problems) != 0 {
		t.Fatalf("check while the scrub ran: %+v", rep)
	}
	if rep.LastScrub == nil || rep.LastScrub.CollectedBlobs != 1 || rep.LastScrub.Images != 1 {
		t.Fatalf("LastScrub: %+v", rep.LastScrub)
	}
	if got := <-reported; got.CollectedBlobs != 1 || !got.Started.Equal(rep.LastScrub.Started) {
		t.Fatalf("done got %+v", got)
	}
	if _, err := os.Stat(filepath.Join(root, BlobsDir, "sha256", orphan.Encoded())); !os.IsNotExist(err) {
		t.Fatalf("orphan still in blobs/: %v", err)
	}
}

// TestCloseStopsTheScrub: Close returns with a scrub started just before
// (stopped, or finished), and no scrub starts on a closed store.
func TestCloseStopsTheScrub(t *testing.T) {
	s := newTestStore(t)
	for i := 0; i < 20; i++ {
		putTestImage(t, s, testImage{tags: []string{"a:" + string(rune('a'+i))}, layers: []string{string(rune('a' + i))}})
	}
	s.StartScrub(nil)
	must(t, s.Close())
	s.StartScrub(func(*ScrubReport) { t.Error("a scrub started on a closed store") })
}

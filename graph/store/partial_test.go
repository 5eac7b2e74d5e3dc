package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// cutSource serves blob from the kept bytes on, checking them as the
// registry's reader does, and fails with an unavailable link after cut
// bytes (cut < 0: never).
func cutSource(t *testing.T, blob []byte, cut int64, asked *[]int64) ResumeFunc {
	return func(have io.Reader, n int64) (io.ReadCloser, error) {
		*asked = append(*asked, n)
		kept, err := io.ReadAll(have)
		if err != nil || int64(len(kept)) != n {
			t.Fatalf("kept bytes: %d of %d, %v", len(kept), n, err)
		}
		if !bytes.Equal(kept, blob[:n]) {
			return nil, fmt.Errorf("kept bytes are not the blob's%.0w", errdefs.ErrDataLoss)
		}
		rest := blob[n:]
		if cut >= 0 && cut < int64(len(rest)) {
			return io.NopCloser(io.MultiReader(bytes.NewReader(rest[:cut]), errReader{fmt.Errorf("link cut%.0w", errdefs.ErrUnavailable)})), nil
		}
		return io.NopCloser(bytes.NewReader(rest)), nil
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func keepUnlessWrong(err error) bool { return !errdefs.IsDataLoss(err) }

func TestPartialDownloadSurvivesFailureAndRestart(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	blob := make([]byte, 300<<10)
	rand.Read(blob)
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	var asked []int64

	l := s.NewLease()
	if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(cutSource(t, blob, 100<<10, &asked), keepUnlessWrong)); !errdefs.IsUnavailable(err) {
		t.Fatalf("first attempt: %v", err)
	}
	l.Release()
	if n, b := s.PartialUsage(); n != 1 || b != 100<<10 {
		t.Fatalf("partials after a failure: %d, %d bytes", n, b)
	}
	// A restart keeps it; a failure again adds to it.
	s.Close()
	s = openTestStore(t, root)
	l = s.NewLease()
	if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(cutSource(t, blob, 50<<10, &asked), keepUnlessWrong)); !errdefs.IsUnavailable(err) {
		t.Fatalf("second attempt: %v", err)
	}
	l.Release()
	l = s.NewLease()
	defer l.Release()
	if created, err := l.WriteBlob(context.Background(), desc, nil, Resumable(cutSource(t, blob, -1, &asked), keepUnlessWrong)); err != nil || !created {
		t.Fatalf("third attempt: %v %v", created, err)
	}
	if fmt.Sprint(asked) != fmt.Sprint([]int64{0, 100 << 10, 150 << 10}) {
		t.Errorf("resumed from %v", asked)
	}
	if got, err := s.ReadBlob(desc.Digest, desc.Size); err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("stored blob: %v", err)
	}
	if n, _ := s.PartialUsage(); n != 0 {
		t.Errorf("%d partials left after the blob was stored", n)
	}
}

func TestPartialDroppedWhenWrong(t *testing.T) {
	s := newTestStore(t)
	blob := make([]byte, 64<<10)
	rand.Read(blob)
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	var asked []int64
	l := s.NewLease()
	defer l.Release()
	if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(cutSource(t, blob, 1000, &asked), keepUnlessWrong)); err == nil {
		t.Fatal("cut download succeeded")
	}
	// Damage the kept bytes: the resumed attempt proves wrong, drops them
	// and downloads the blob once more from zero, within the same call.
	p := s.partialPath(desc.Digest)
	b, err := os.ReadFile(p)
	must(t, err)
	b[10] ^= 1
	must(t, os.WriteFile(p, b, 0o600))
	if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(cutSource(t, blob, -1, &asked), keepUnlessWrong)); err != nil {
		t.Fatalf("damaged partial: %v", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("damaged partial kept: %v", err)
	}
	if got, err := s.ReadBlob(desc.Digest, desc.Size); err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("stored blob: %v", err)
	}
	if fmt.Sprint(asked) != "[0 1000 0]" {
		t.Errorf("asked from %v", asked)
	}
	if n := s.PartialRestarts(); n != 1 {
		t.Errorf("restarts: %d", n)
	}
}

// wrongSource serves bytes that are never the blob: the kept ones are
// judged at the end, as the registry's verifying reader does.
func wrongSource(size int64, asked *[]int64) ResumeFunc {
	return func(have io.Reader, n int64) (io.ReadCloser, error) {
		*asked = append(*asked, n)
		if _, err := io.Copy(io.Discard, have); err != nil {
			return nil, err
		}
		return io.NopCloser(io.MultiReader(bytes.NewReader(make([]byte, size-n)),
			errReader{fmt.Errorf("digest mismatch%.0w", errdefs.ErrDataLoss)})), nil
	}
}

// A restart from zero is tried once, and only after a resume: a registry
// whose bytes are wrong from byte 0 fails as before, and one that is wrong
// after the restart too fails after two attempts, not in a loop.
func TestPartialRestartIsOnceAndOnlyAfterAResume(t *testing.T) {
	s := newTestStore(t)
	blob := make([]byte, 64<<10)
	rand.Read(blob)
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	l := s.NewLease()
	defer l.Release()

	var asked []int64
	if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(wrongSource(desc.Size, &asked), keepUnlessWrong)); !errdefs.IsDataLoss(err) {
		t.Fatalf("wrong from zero: %v", err)
	}
	if fmt.Sprint(asked) != "[0]" {
		t.Errorf("from zero: asked from %v", asked)
	}

	asked = nil
	if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(cutSource(t, blob, 1000, &asked), keepUnlessWrong)); !errdefs.IsUnavailable(err) {
		t.Fatalf("cut download: %v", err)
	}
	if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(wrongSource(desc.Size, &asked), keepUnlessWrong)); !errdefs.IsDataLoss(err) {
		t.Fatalf("wrong after a resume: %v", err)
	}
	if fmt.Sprint(asked) != "[0 1000 0]" {
		t.Errorf("after a resume: asked from %v", asked)
	}
	if n, _ := s.PartialUsage(); n != 0 {
		t.Errorf("%d partials kept after wrong bytes", n)
	}
	if n := s.PartialRestarts(); n != 1 {
		t.Errorf("restarts: %d", n)
	}
}

func TestPartialsExpireAndAreCapped(t *testing.T) {
	root := t.TempDir()
	s, err := Open(context.Background(), Options{Root: root, Logger: quietLogger(), PartialMaxBytes: 250 << 10})
	must(t, err)
	defer func() { s.Close() }()
	var descs []ocispec.Descriptor
	for i := 0; i < 3; i++ {
		blob := make([]byte, 200<<10)
		rand.Read(blob)
		desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
		descs = append(descs, desc)
		var asked []int64
		l := s.NewLease()
		if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(cutSource(t, blob, 100<<10, &asked), keepUnlessWrong)); err == nil {
			t.Fatal("cut download succeeded")
		}
		l.Release()
		// Written one after the other: the oldest is the first.
		must(t, os.Chtimes(s.partialPath(desc.Digest), time.Now(), time.Now().Add(time.Duration(i-3)*time.Minute)))
	}
	// 250 KiB hold two of the three 100 KiB partials: the oldest went.
	if n, b := s.PartialUsage(); n != 2 || b != 200<<10 {
		t.Fatalf("partials under the cap: %d, %d bytes", n, b)
	}
	if _, err := os.Stat(s.partialPath(descs[0].Digest)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the oldest partial was kept past the cap")
	}
	// A day after its last write a partial is collected, at start-up too.
	old := time.Now().Add(-PartialTTL - time.Minute)
	must(t, os.Chtimes(s.partialPath(descs[1].Digest), old, old))
	if _, freed, err := s.CollectAll(context.Background()); err != nil || freed != 100<<10 {
		t.Fatalf("collect: %d freed, %v", freed, err)
	}
	must(t, os.Chtimes(s.partialPath(descs[2].Digest), old, old))
	s.Close()
	s = openTestStore(t, root)
	if n, b := s.PartialUsage(); n != 0 || b != 0 {
		t.Fatalf("expired partials after a restart: %d, %d bytes", n, b)
	}
}

// A blob the failed operation completed is not deleted with its lease but
// kept as a complete partial, and so is an orphan at start-up: the next
// attempt hashes it and downloads nothing.
func TestCompletedDownloadOfAFailedPullIsKept(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root)
	blob := make([]byte, 100<<10)
	rand.Read(blob)
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	var asked []int64
	l := s.NewLease()
	if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(cutSource(t, blob, -1, &asked), keepUnlessWrong)); err != nil {
		t.Fatal(err)
	}
	l.Release() // no record: the pull failed on another layer
	if s.HasBlob(desc.Digest) {
		t.Fatal("an unrecorded blob stayed in blobs/")
	}
	if n, b := s.PartialUsage(); n != 1 || b != desc.Size {
		t.Fatalf("partials: %d, %d bytes", n, b)
	}
	l = s.NewLease()
	if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(cutSource(t, blob, -1, &asked), keepUnlessWrong)); err != nil {
		t.Fatal(err)
	}
	// Unrecorded again, and the daemon dies with it in blobs/: the scrub
	// after the next start moves it to partial/.
	s.Close()
	s = openTestStore(t, root)
	if rep := s.Scrub(context.Background()); rep.CollectedBlobs != 1 || rep.Error != "" {
		t.Fatalf("scrub: %+v", rep)
	}
	if s.HasBlob(desc.Digest) {
		t.Fatal("an orphan stayed in blobs/ after a restart")
	}
	l = s.NewLease()
	defer l.Release()
	if _, err := l.WriteBlob(context.Background(), desc, nil, Resumable(cutSource(t, blob, -1, &asked), keepUnlessWrong)); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(asked) != fmt.Sprint([]int64{0, desc.Size, desc.Size}) {
		t.Fatalf("asked from %v", asked)
	}
}

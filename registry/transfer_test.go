package registry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/registry/upload"
)

// The upload's bounds, as the tests of TransferBlob count them.
const (
	maxMountSources       = upload.MaxMountSources
	maxUploadRestarts     = upload.MaxRestarts
	maxPatchesPerBlob     = upload.MaxPatchesPerBlob
	defaultWholeUploadMax = upload.DefaultWholeMax
)

func transferRepo(t *testing.T, s *Service, f *fakeRegistry, path string) *Repository {
	t.Helper()
	return mustRepo(t, s, f.host()+"/"+path)
}

func opener(b []byte) BlobOpener {
	return func(_ context.Context, off int64) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b[off:])), nil
	}
}

func countPrefix(reqs []string, prefix string) int {
	n := 0
	for _, r := range reqs {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

// Five repositories said to hold the blob, every mount refused: three
// mounts are tried, the first two sessions are cancelled, the third
// carries the upload; nothing is left open.
func TestTransferBlobTriesThreeMountsAndLeavesNoSession(t *testing.T) {
	f := newFakeRegistry(t)
	f.refuseMount = true
	s := testService(t, ServiceOptions{})
	r := transferRepo(t, s, f, "dst/app")
	blob := []byte("layer bytes")
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	f.reset()
	how, _, err := r.TransferBlob(context.Background(), desc, []string{"a/1", "a/2", "a/3", "a/4", "a/5"}, opener(blob))
	if err != nil || how != BlobUploaded {
		t.Fatalf("TransferBlob = %v, %v", how, err)
	}
	reqs := f.reset()
	if got := countPrefix(reqs, "POST /v2/dst/app/blobs/uploads/"); got != maxMountSources {
		t.Errorf("%d POSTs, want %d (mounts; the last one's session carries the upload):\n%s", got, maxMountSources, strings.Join(reqs, "\n"))
	}
	if got := countPrefix(reqs, "DELETE "); got != maxMountSources-1 {
		t.Errorf("%d DELETEs, want %d:\n%s", got, maxMountSources-1, strings.Join(reqs, "\n"))
	}
	if n := f.openSessions(); n != 0 {
		t.Errorf("%d upload sessions left open", n)
	}
	if !bytes.Equal(f.blobs[desc.Digest], blob) {
		t.Error("blob not stored")
	}
}

// A source whose bytes do not match: the session is cancelled, nothing is
// committed, and the source's error is the answer.
func TestTransferBlobLyingSourceCommitsNothing(t *testing.T) {
	for _, whole := range []bool{false, true} {
		t.Run(uploadPath(whole), func(t *testing.T) { testLyingSource(t, whole) })
	}
}

func testLyingSource(t *testing.T, whole bool) {
	f := newFakeRegistry(t)
	s := uploadService(t, whole)
	r := transferRepo(t, s, f, "dst/app")
	blob := []byte("the real bytes")
	desc := ocispec.Descriptor{Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	forged := []byte("the fake bytes")
	open := func(context.Context, int64) (io.ReadCloser, error) {
		return io.NopCloser(newVerifyingReader(bytes.NewReader(forged), desc, "src.example")), nil
	}
	f.reset()
	_, _, err := r.TransferBlob(context.Background(), desc, nil, open)
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("err = %v, want a digest mismatch", err)
	}
	reqs := f.reset()
	if countPrefix(reqs, "PUT ") != 0 {
		t.Errorf("a lying source's blob was committed:\n%s", strings.Join(reqs, "\n"))
	}
	if whole && len(reqs) != 1 {
		// HEAD only: a small blob is verified before a session opens.
		t.Errorf("a small blob's lying source sent requests:\n%s", strings.Join(reqs, "\n"))
	}
	if n := f.openSessions(); n != 0 {
		t.Errorf("%d upload sessions left open", n)
	}

	// Short and long sources fail too, and leave nothing.
	for name, b := range map[string][]byte{"short": blob[:4], "long": append(append([]byte(nil), blob...), 'x')} {
		_, _, err := r.TransferBlob(context.Background(), desc, nil, opener(b))
		if !errdefs.IsDataLoss(err) {
			t.Errorf("%s source: err = %v, want data loss", name, err)
		}
	}
	if n := f.openSessions(); n != 0 || f.blobs[desc.Digest] != nil {
		t.Errorf("%d sessions open, blob stored: %v", n, f.blobs[desc.Digest] != nil)
	}
}

// A blob read from one repository is mounted from there into another
// repository of the same registry, without the caller naming it.
func TestTransferBlobMountsFromWhereItWasRead(t *testing.T) {
	f := newFakeRegistry(t)
	s := testService(t, ServiceOptions{})
	desc := f.putBlob([]byte("shared layer"))
	src := transferRepo(t, s, f, "src/app")
	rc, err := src.FetchBlob(context.Background(), desc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	dst := transferRepo(t, s, f, "dst/app")
	if got := dst.mountSources(desc.Digest, nil); len(got) != 1 || got[0] != "src/app" {
		t.Fatalf("mount sources = %v, want [src/app]", got)
	}
}

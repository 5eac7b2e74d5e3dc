package distribution

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/internal/graphtest"
)

// rangeFakeFetcher serves blob from the kept bytes on (checking them as
// registry.FetchBlobFrom does) and cuts the body after cut bytes when cut
// is positive.
type rangeFakeFetcher struct {
	blob  []byte
	cut   int
	asked []int64
}

func (f *rangeFakeFetcher) FetchBlob(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return f.FetchBlobFrom(ctx, desc, nil, 0)
}

func (f *rangeFakeFetcher) FetchBlobFrom(_ context.Context, _ ocispec.Descriptor, have io.Reader, n int64) (io.ReadCloser, error) {
	f.asked = append(f.asked, n)
	if n > 0 {
		kept, err := io.ReadAll(have)
		if err != nil || !bytes.Equal(kept, f.blob[:n]) {
			return nil, fmt.Errorf("kept bytes wrong%.0w", errdefs.ErrDataLoss)
		}
	}
	rest := f.blob[n:]
	if f.cut > 0 && f.cut < len(rest) {
		return io.NopCloser(io.MultiReader(bytes.NewReader(rest[:f.cut]), errReader{fmt.Errorf("reset%.0w", errdefs.ErrUnavailable)})), nil
	}
	return io.NopCloser(bytes.NewReader(rest)), nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// A pull that failed keeps its partial in the store; the next pull asks
// only for the rest, and its progress starts where the bytes kept end:
// the docker CLI draws progressDetail.current, so the bar does not go back.
func TestResumedPullProgressCarriesOn(t *testing.T) {
	for _, metrics := range []bool{false, true} {
		t.Run(fmt.Sprintf("metrics %v", metrics), func(t *testing.T) {
			s := graphtest.OpenStore(t, t.TempDir())
			blob := make([]byte, 2<<20)
			rand.Read(blob)
			desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
			var opts Options
			if metrics {
				opts.Observer = &countingObserver{}
			}
			bt := newBlobTransfers(opts)
			f := &rangeFakeFetcher{blob: blob, cut: 1 << 20}
			l := s.NewLease()
			if err := bt.downloadLayers(context.Background(), f, leaseIngester{l}, []ocispec.Descriptor{desc}, newProgressOutput(&graphtest.Messages{})); !errdefs.IsUnavailable(err) {
				t.Fatalf("cut pull: %v", err)
			}
			l.Release()
			f.cut = 0
			msgs := &graphtest.Messages{}
			l = s.NewLease()
			defer l.Release()
			if err := bt.downloadLayers(context.Background(), f, leaseIngester{l}, []ocispec.Descriptor{desc}, newProgressOutput(msgs)); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(f.asked) != fmt.Sprint([]int64{0, 1 << 20}) {
				t.Fatalf("asked from %v", f.asked)
			}
			var currents []int64
			for _, m := range msgs.All() {
				if m.Status == "Downloading" && m.Progress != nil {
					currents = append(currents, m.Progress.Current)
				}
			}
			if len(currents) == 0 || currents[0] <= 1<<20 || currents[len(currents)-1] != desc.Size {
				t.Fatalf("progress %v: want it to start past the %d bytes kept and end at %d", currents, 1<<20, desc.Size)
			}
			for i := 1; i < len(currents); i++ {
				if currents[i] < currents[i-1] {
					t.Fatalf("progress went back: %v", currents)
				}
			}
			if !s.HasBlob(desc.Digest) {
				t.Fatal("blob not stored")
			}
		})
	}
}

package registry

import (
	"context"
	"crypto/rand"
	"io"
	"testing"

	"github.com/distribution/reference"
)

// BenchmarkFetchBlob reads a 32 MiB blob through FetchBlob from a local
// registry: the happy path the resuming reader must not slow (make bench
// case 3 is the end-to-end form).
func BenchmarkFetchBlob(b *testing.B) {
	blob := make([]byte, 32<<20)
	rand.Read(blob)
	t := &testing.T{}
	f := newFakeRegistry(t)
	defer f.srv.Close()
	desc := f.putBlob(blob)
	s, err := newService(ServiceOptions{}, 0)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := reference.ParseNormalizedNamed(f.host() + "/a/b")
	repo, err := s.Repository(context.Background(), n, Credentials{})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 256<<10) // store.CopyCtx's buffer
	b.SetBytes(int64(len(blob)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rc, err := repo.FetchBlob(context.Background(), desc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{rc}, buf); err != nil {
			b.Fatal(err)
		}
		rc.Close()
	}
}

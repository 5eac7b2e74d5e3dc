package distribution

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The progress a copy reports around SRC's reader keeps the reader's
// VerifiedDigest: TransferBlob then does not hash the bytes a second time.
// A reader that does not verify itself gets progress and no claim.
func TestTransferOpenerKeepsVerifiedDigest(t *testing.T) {
	d := digest.FromString("blob")
	desc := ocispec.Descriptor{Digest: d, Size: 4}
	for _, claims := range []bool{true, false} {
		tr := transfer{
			open: func(context.Context, ocispec.Descriptor, int64) (io.ReadCloser, error) {
				rc := io.NopCloser(strings.NewReader("blob"))
				if claims {
					return claimingReader{rc, d}, nil
				}
				return rc, nil
			},
			po:    newProgressOutput(nil),
			words: copyWords,
		}
		rc, err := tr.opener(planBlob{desc: desc})(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := rc.(digestVerifier)
		if ok != claims || (ok && v.VerifiedDigest() != d) {
			t.Errorf("source claims %v: opener's reader claims %v", claims, ok)
		}
		if b, err := io.ReadAll(rc); err != nil || string(b) != "blob" {
			t.Errorf("read %q, %v", b, err)
		}
	}
}

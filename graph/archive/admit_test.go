package archive

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
)

// untouched fails the test when read.
type untouched struct{ t *testing.T }

func (u untouched) Read([]byte) (int, error) {
	u.t.Error("the archive was read before the load was admitted")
	return 0, errors.New("read")
}

// A load the policy refuses fails with its error before a byte of the
// archive is read.
func TestLoadAskedBeforeReading(t *testing.T) {
	refused := fmt.Errorf("load refused by the signature policy%.0w", errdefs.ErrPermissionDenied)
	s := New(graphtest.OpenStore(t, t.TempDir()), graphtest.Platform(), nil, func(context.Context) error { return refused })
	err := s.LoadImage(context.Background(), untouched{t}, true, nil, types.DiscardProgress)
	if !errors.Is(err, refused) || !errdefs.IsPermissionDenied(err) {
		t.Fatalf("err = %v, want the admission's", err)
	}
}

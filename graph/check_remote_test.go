package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/store"
)

func TestCheckRemoteNamesAndLocalImages(t *testing.T) {
	ctx := context.Background()
	s, _ := newLocalTestStore(t) // no registry: a pulled image's check is an error
	a := putCustomImage(t, s, store.ImageConfig{}, [][]byte{[]byte("a")}, "busybox:1", "busybox:2")
	putCustomImage(t, s, store.ImageConfig{}, [][]byte{[]byte("b")}, "localhost:5000/app:1")
	pulled := "docker.io/library/busybox@" + digest.FromString("pulled").String()
	if _, err := s.images.Update(false, func(tx *store.Txn) error { return tx.PointRef(pulled, a.ID) }); err != nil {
		t.Fatal(err)
	}
	check := func(names ...string) (map[string]string, error) {
		got := map[string]string{}
		err := s.CheckRemote(ctx, types.RemoteCheckOptions{Names: names}, func(r types.RemoteCheckResult) error {
			got[r.Repository+":"+r.Tag] = r.RemoteStatus
			return nil
		})
		return got, err
	}
	cases := []struct {
		names []string
		want  map[string]string
	}{
		{nil, map[string]string{"busybox:1": "error", "busybox:2": "error", "localhost:5000/app:1": "local"}},
		{[]string{"busybox"}, map[string]string{"busybox:1": "error", "busybox:2": "error"}},
		{[]string{"docker.io/library/busybox:2", "localhost:5000/*"}, map[string]string{"busybox:2": "error", "localhost:5000/app:1": "local"}},
	}
	for _, tc := range cases {
		got, err := check(tc.names...)
		if err != nil {
			t.Fatalf("%v: %v", tc.names, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%v: got %v, want %v", tc.names, got, tc.want)
		}
	}
	// The registry could not be reached for busybox:1 (or :2, whichever
	// went first): the other is not asked, and says why.
	var notAsked int
	err := s.CheckRemote(ctx, types.RemoteCheckOptions{Names: []string{"busybox"}}, func(r types.RemoteCheckResult) error {
		if strings.HasPrefix(r.RemoteError, "not asked: ") {
			notAsked++
		}
		return nil
	})
	if err != nil || notAsked != 1 {
		t.Errorf("after an unreachable registry: %d not asked (%v), want 1", notAsked, err)
	}
	if got, err := check("busybox", "nope"); !errdefs.IsNotFound(err) || len(got) != 0 {
		t.Errorf("a name matching nothing: %v, %v emitted", err, got)
	}
	if _, err := check("["); !errdefs.IsInvalidArgument(err) {
		t.Errorf("a bad pattern: %v", err)
	}
	// A client that goes away stops the check with its error.
	stop := errors.New("client gone")
	if err := s.CheckRemote(ctx, types.RemoteCheckOptions{}, func(types.RemoteCheckResult) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("emit error: %v", err)
	}
}

func TestCheckRemoteSkipping(t *testing.T) {
	ctx := context.Background()
	s, _ := newLocalTestStore(t)
	a := putCustomImage(t, s, store.ImageConfig{}, [][]byte{[]byte("a")}, "busybox:1")
	putCustomImage(t, s, store.ImageConfig{}, [][]byte{[]byte("b")}, "localhost:5000/app:1")
	pulled := "docker.io/library/busybox@" + digest.FromString("pulled").String()
	if _, err := s.images.Update(false, func(tx *store.Txn) error { return tx.PointRef(pulled, a.ID) }); err != nil {
		t.Fatal(err)
	}
	var asked []string
	got := map[string]string{}
	err := s.CheckRemoteSkipping(ctx, types.RemoteCheckOptions{}, func(reg string) bool {
		asked = append(asked, reg)
		return reg == "docker.io"
	}, func(r types.RemoteCheckResult) error {
		got[r.Repository+":"+r.Tag] = r.RemoteStatus
		return nil
	})
	if err != nil || fmt.Sprint(got) != "map[localhost:5000/app:1:local]" {
		t.Fatalf("got %v, %v; want only the tag of localhost:5000", got, err)
	}
	if !slices.Contains(asked, "docker.io") || !slices.Contains(asked, "localhost:5000") {
		t.Errorf("skip was asked about %v", asked)
	}
}

func mustNamed(t *testing.T, s string) reference.Named {
	t.Helper()
	n, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

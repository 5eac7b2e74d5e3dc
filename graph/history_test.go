package graph

import (
	"context"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

func TestImageHistoryNewestFirst(t *testing.T) {
	s, _ := newLocalTestStore(t)
	t1 := time.Unix(1000, 0).UTC()
	t2 := time.Unix(2000, 0).UTC()
	var cfg store.ImageConfig
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.History = []ocispec.History{
		{Created: &t1, CreatedBy: "ADD rootfs"},
		{Created: &t2, CreatedBy: "ENV X=1", EmptyLayer: true},
		{Created: &t2, CreatedBy: "RUN make", Comment: "built"},
	}
	rec := putCustomImage(t, s, cfg, [][]byte{[]byte("layer-one"), []byte("layer-two!")}, "hist:1")
	h, err := s.ImageHistory(context.Background(), "hist:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 {
		t.Fatalf("got %d entries", len(h))
	}
	if h[0].ID != rec.ID.String() || h[0].CreatedBy != "RUN make" || h[0].Size != int64(len("layer-two!")) || h[0].Comment != "built" ||
		len(h[0].Tags) != 1 || h[0].Tags[0] != "hist:1" {
		t.Errorf("top = %+v", h[0])
	}
	if h[1].ID != "<missing>" || h[1].Size != 0 || h[1].Tags != nil {
		t.Errorf("empty layer = %+v", h[1])
	}
	if h[2].ID != "<missing>" || h[2].Size != int64(len("layer-one")) || h[2].Created != 1000 {
		t.Errorf("base = %+v", h[2])
	}
}

func TestImageHistoryTooManyLayers(t *testing.T) {
	s, _ := newLocalTestStore(t)
	var cfg store.ImageConfig
	cfg.History = []ocispec.History{{CreatedBy: "a"}, {CreatedBy: "b"}}
	putCustomImage(t, s, cfg, [][]byte{[]byte("only")}, "bad:1")
	if _, err := s.ImageHistory(context.Background(), "bad:1", nil); err == nil {
		t.Fatal("history with more layers than the image accepted")
	}
}

func TestImageHistoryImported(t *testing.T) {
	s, _ := newLocalTestStore(t)
	id := graphtest.ImportImage(t, s, "imp", "x")
	h, err := s.ImageHistory(context.Background(), "imp", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].ID != id.String() || h[0].Comment != "test import" || h[0].Size <= 0 || h[0].CreatedBy != "" {
		t.Fatalf("history = %+v", h)
	}
}

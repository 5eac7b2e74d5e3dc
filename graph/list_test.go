package graph

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	bolt "go.etcd.io/bbolt"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

// listFixture makes three images with distinct creation times:
// old (busybox:1, label tier=base), mid (127.0.0.1:5000/tiny:1.0 and
// 127.0.0.1:5000/multi:1.0) and new (untagged, label tier=app).
func listFixture(t *testing.T) (*Service, map[string]string) {
	s, _ := newLocalTestStore(t)
	ids := map[string]string{}
	for i, c := range []struct {
		key    string
		labels map[string]string
		tags   []string
	}{
		{"old", map[string]string{"tier": "base"}, []string{"busybox:1"}},
		{"mid", nil, []string{"127.0.0.1:5000/tiny:1.0", "127.0.0.1:5000/multi:1.0"}},
		{"new", map[string]string{"tier": "app"}, nil},
	} {
		var cfg store.ImageConfig
		ts := time.Unix(int64(1000*(i+1)), 0).UTC()
		cfg.Created = &ts
		cfg.Config.Labels = c.labels
		rec := putCustomImage(t, s, cfg, [][]byte{[]byte("layer " + c.key)}, c.tags...)
		ids[c.key] = rec.ID.String()
	}
	return s, ids
}

func listIDs(t *testing.T, s *Service, f types.Filters) ([]string, error) {
	t.Helper()
	sums, err := s.Images(context.Background(), types.ImageListOptions{Filters: f})
	var out []string
	for _, x := range sums {
		out = append(out, x.ID)
	}
	return out, err
}

func TestImagesListFilters(t *testing.T) {
	s, ids := listFixture(t)
	f := func(k string, vs ...string) types.Filters {
		m := map[string]bool{}
		for _, v := range vs {
			m[v] = true
		}
		return types.Filters{k: m}
	}
	tests := []struct {
		name   string
		filter types.Filters
		want   []string
	}{
		{"none, newest first", nil, []string{"new", "mid", "old"}},
		{"dangling=true", f("dangling", "true"), []string{"new"}},
		{"dangling=false", f("dangling", "false"), []string{"mid", "old"}},
		{"reference glob", f("reference", "127.0.0.1:5000/tiny*"), []string{"mid"}},
		{"reference familiar", f("reference", "busybox"), []string{"old"}},
		{"reference with tag", f("reference", "busybox:1"), []string{"old"}},
		{"reference no match", f("reference", "nothing"), nil},
		{"label key", f("label", "tier"), []string{"new", "old"}},
		{"label k=v", f("label", "tier=app"), []string{"new"}},
		{"before", f("before", "127.0.0.1:5000/tiny:1.0"), []string{"old"}},
		{"since", f("since", "busybox:1"), []string{"new", "mid"}},
		{"until unix", f("until", "2500"), []string{"mid", "old"}},
		{"until rfc3339", f("until", time.Unix(1500, 0).UTC().Format(time.RFC3339)), []string{"old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := listIDs(t, s, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, k := range tt.want {
				want = append(want, ids[k])
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %v, want %v (%v)", got, want, tt.want)
			}
		})
	}
}

func TestImagesListReferenceFilterNarrowsTags(t *testing.T) {
	s, _ := listFixture(t)
	sums, err := s.Images(context.Background(), types.ImageListOptions{Filters: types.Filters{"reference": {"127.0.0.1:5000/tiny*": true}}})
	if err != nil || len(sums) != 1 {
		t.Fatalf("%v %v", sums, err)
	}
	if fmt.Sprint(sums[0].RepoTags) != "[127.0.0.1:5000/tiny:1.0]" {
		t.Fatalf("RepoTags = %v", sums[0].RepoTags)
	}
}

func TestImagesListBadFilters(t *testing.T) {
	s, _ := listFixture(t)
	tests := []struct {
		filter types.Filters
		msg    string
	}{
		{types.Filters{"bogus": {"x": true}}, "Invalid filter 'bogus'"},
		{types.Filters{"dangling": {"maybe": true}}, "Invalid filter 'dangling=maybe'"},
		{types.Filters{"until": {"yesterday-ish": true}}, "invalid timestamp"},
		{types.Filters{"before": {"nosuch": true}}, "No such image: nosuch:latest"},
	}
	for _, tt := range tests {
		_, err := listIDs(t, s, tt.filter)
		if err == nil || !strings.HasPrefix(err.Error(), tt.msg) {
			t.Errorf("%v: err = %v, want %q", tt.filter, err, tt.msg)
		}
	}
	_, err := listIDs(t, s, types.Filters{"bogus": {"x": true}})
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("class = %v", err)
	}
}

func TestImagesSummaryShape(t *testing.T) {
	s, ids := listFixture(t)
	sums, err := s.Images(context.Background(), types.ImageListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js := graphtest.JSONText(t, sums)
	for _, want := range []string{`"Containers":0`, `"SharedSize":-1`, `"RepoTags":[]`, `"RepoDigests":[]`, `"Created":3000`, `"Labels":{"tier":"app"}`, `"ParentId":""`} {
		if !strings.Contains(js, want) {
			t.Errorf("missing %s in %s", want, js)
		}
	}
	if sums[2].ID != ids["old"] || sums[2].Size != int64(len("layer old")) {
		t.Errorf("old = %+v", sums[2])
	}
	du, err := s.DiskUsage(context.Background())
	if err != nil || len(du.Images) != 3 || du.LayersSize <= 0 {
		t.Fatalf("DiskUsage = %+v %v", du, err)
	}
	if s.Count() != 3 {
		t.Fatalf("Count = %d", s.Count())
	}
}

// TestImagesListSameAfterSummariesUpgrade: a meta.db without the summaries
// bucket (written before it existed) lists the same, byte for byte, after
// the fill at open; an image whose config cannot be read at the fill is
// skipped from the list, as it was when listing read the config.
func TestImagesListSameAfterSummariesUpgrade(t *testing.T) {
	s, ids := listFixture(t)
	root := s.images.Root()
	list := func(s *Service) string {
		sums, err := s.Images(context.Background(), types.ImageListOptions{All: true, Manifests: true})
		if err != nil {
			t.Fatal(err)
		}
		return graphtest.JSONText(t, sums)
	}
	before := list(s)
	dropSummaries := func() {
		db, err := bolt.Open(filepath.Join(root, "wharf", "meta.db"), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(btx *bolt.Tx) error {
			if err := btx.DeleteBucket([]byte("summaries")); err != nil {
				return err
			}
			return btx.Bucket([]byte("meta")).Delete([]byte("sumgen"))
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	dropSummaries()
	s, _ = openTestStore(t, Options{Root: root})
	if after := list(s); after != before {
		t.Fatalf("list after the upgrade:\n%s\nbefore:\n%s", after, before)
	}
	s.Close()
	dropSummaries()
	d := digest.Digest(ids["new"])
	if err := os.Remove(filepath.Join(root, store.BlobsDir, d.Algorithm().String(), d.Encoded())); err != nil {
		t.Fatal(err)
	}
	s, _ = openTestStore(t, Options{Root: root})
	got, err := listIDs(t, s, nil)
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]string{ids["mid"], ids["old"]}) {
		t.Fatalf("list with new's config gone = %v %v", got, err)
	}
}

package graph

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/internal/graphtest"
	"github.com/wharfproject/wharf/graph/store"
)

// TestImagesListIndexesMatchTheWalk: on random stores (random labels, some
// longer than the index keeps; creation times, some unknown; tags with and
// without a host, digest references; then random tags, untags and
// deletes), every random combination of filters lists byte for byte what
// the walk over every summary lists (walkList), so the indexes only ever
// narrow.
func TestImagesListIndexesMatchTheWalk(t *testing.T) {
	names := []string{
		"busybox", "library/alpine", "foo/bar", "foo/baz", "docker.io/user/img", "ghcr.io/o/r", "ghcr.io/o/s",
		"localhost:5000/x", "127.0.0.1:5000/tiny", "busyboxy", "library/foo", "img1", "img10", "registry.example.com/library/busybox",
	}
	long := strings.Repeat("v", 1100)
	labelKeys := []string{"a", "b", "c", "a=b", "long"}
	labelVals := []string{"1", "2", "", "x=y", long}
	patterns := []string{
		"busybox", "busybox*", "busybox:*", "b*", "*box", "*", "ghcr.io/o/*", "ghcr.io/*", "ghcr.io/o/r",
		"localhost:5000/*", "localhost*", "foo/*", "foo/bar:t1", "foo/ba?", "img1*", "img1", "img1:t?",
		"busybox@sha256:*", "*@sha256:*", "127.0.0.1:5000/t?ny*", "[bf]*", "library/busybox", "docker.io/library/busybox",
		"docker.io/*", "d*", "registry.example.com/library/*", "nomatch", `\busybox`, "user/img",
		"img1?", "img?", "foo/ba[rz]:t?", "busybox:t[01]", "ghcr.io/o/?", "img1?:t1", "[a-c]*", "foo/ba[^r]", "?usybox",
		"localhost:5000/?:t[0-2]", "fo[o]", "img1@*", "registry.example.com/library/busybo?",
	}
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			s, _ := newLocalTestStore(t)
			var ids []string
			for i := 0; i < 30; i++ {
				var cfg store.ImageConfig
				if rng.Intn(6) > 0 {
					ts := time.Unix(int64(1000+rng.Intn(20)*100), 0).UTC()
					cfg.Created = &ts
				}
				cfg.Config.Labels = map[string]string{}
				for j := rng.Intn(4); j > 0; j-- {
					cfg.Config.Labels[labelKeys[rng.Intn(len(labelKeys))]] = labelVals[rng.Intn(len(labelVals))]
				}
				var tags []string
				for j := rng.Intn(3); j > 0; j-- {
					tags = append(tags, fmt.Sprintf("%s:t%d", names[rng.Intn(len(names))], rng.Intn(3)))
				}
				norm, err := store.NormaliseRefs(tags, false)
				if err != nil {
					t.Fatal(err)
				}
				lease := s.images.NewLease()
				layer := graphtest.WriteBlob(t, lease, "application/vnd.oci.image.layer.v1.tar", []byte(fmt.Sprint("layer ", seed, i)))
				cfg.RootFS.Type = "layers"
				cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, layer.Digest)
				rec := writeOCIImage(t, lease, &cfg, []ocispec.Descriptor{layer})
				rec.RepoTags = norm
				if rng.Intn(2) == 0 {
					rec.RepoDigests = []string{fmt.Sprintf("docker.io/library/%s@%s", []string{"busybox", "img1", "foo"}[rng.Intn(3)], rec.Manifest.Digest)}
					if rng.Intn(2) == 0 {
						rec.RepoDigests = append(rec.RepoDigests, fmt.Sprintf("ghcr.io/o/r@%s", rec.Manifest.Digest))
					}
				}
				if err := s.images.Put(lease, rec); err != nil {
					t.Fatal(err)
				}
				lease.Release()
				ids = append(ids, rec.ID.String())
			}
			// Random tags, untags (a delete of a tag) and deletes.
			ctx := context.Background()
			for i := 0; i < 20; i++ {
				id := ids[rng.Intn(len(ids))]
				switch rng.Intn(3) {
				case 0:
					_ = tagAs(ctx, s, id, names[rng.Intn(len(names))], fmt.Sprint("t", rng.Intn(3)))
				case 1:
					_, _ = s.ImageDelete(ctx, fmt.Sprintf("%s:t%d", names[rng.Intn(len(names))], rng.Intn(3)), false, false)
				case 2:
					_, _ = s.ImageDelete(ctx, id, true, false)
				}
			}
			for i := 0; i < 400; i++ {
				f := types.Filters{}
				add := func(k, v string) {
					if f[k] == nil {
						f[k] = map[string]bool{}
					}
					f[k][v] = true
				}
				for j := rng.Intn(3); j > 0; j-- {
					add("reference", patterns[rng.Intn(len(patterns))])
				}
				for j := rng.Intn(3); j > 0; j-- {
					k := labelKeys[rng.Intn(len(labelKeys))]
					if rng.Intn(2) == 0 {
						k += "=" + labelVals[rng.Intn(len(labelVals))]
					}
					add("label", k)
				}
				if rng.Intn(3) == 0 {
					add("dangling", fmt.Sprint(rng.Intn(2) == 0))
				}
				if rng.Intn(5) == 0 {
					add([]string{"before", "since"}[rng.Intn(2)], ids[rng.Intn(len(ids))])
				}
				list := func(walk bool) string {
					s.walkList = walk
					got, err := s.Images(ctx, types.ImageListOptions{All: true, Filters: f})
					if err != nil {
						return "error: " + err.Error()
					}
					return graphtest.JSONText(t, got)
				}
				if idx, walk := list(false), list(true); idx != walk {
					t.Fatalf("filters %v:\nindexes %s\nwalk    %s", f, idx, walk)
				}
			}
		})
	}
}

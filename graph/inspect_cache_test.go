package graph

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func cacheTestConfig(t *testing.T, user string) []byte {
	t.Helper()
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	b, err := json.Marshal(ocispec.Image{
		Created: &created, Author: "a", Platform: ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"},
		Config: ocispec.ImageConfig{User: user, Env: []string{"A=1"}, Labels: map[string]string{"l": "v"}},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromString("l0"), digest.FromString("l1")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A cached build answers exactly what BuildInspect answers, for sources
// that share one config but differ in everything else, and one request's
// fields never leak into the cached entry or into another answer.
func TestInspectCacheMatchesBuildInspect(t *testing.T) {
	cfg := cacheTestConfig(t, "app")
	key := digest.FromBytes(cfg)
	c := newInspectCache(4)
	srcs := []InspectSource{
		{Config: cfg},
		{ID: key, Config: cfg, RepoTags: []string{"a:1"}, RepoDigests: []string{"a@" + digest.FromString("x").String()},
			Descriptor: &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("m"), Size: 9, Data: []byte("x")},
			Layers:     []ocispec.Descriptor{{Size: 3}, {Size: 4}}, LastTagTime: time.Unix(5, 0)},
		{ID: digest.FromString("v1-id"), Config: cfg, RepoTags: []string{"b:2", "b:3"}},
		{Config: cfg},
	}
	var got []any
	for i, src := range srcs {
		want, err := BuildInspect(src)
		if err != nil {
			t.Fatal(err)
		}
		have, err := c.buildInspect(src, key)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(have, want) {
			t.Fatalf("source %d: cached build\n%+v\nwant\n%+v", i, have, want)
		}
		got = append(got, have)
	}
	if c.len() != 1 {
		t.Fatalf("%d entries for one config", c.len())
	}
	// The answers are independent: the first is still what it was.
	first, _ := BuildInspect(srcs[0])
	if !reflect.DeepEqual(got[0], first) {
		t.Fatalf("first answer changed by later ones: %+v", got[0])
	}
}

// A hit does not decode the config again: the entry under a key answers
// even when the bytes passed along would decode to something else (which is
// why the key must be the verified digest of those bytes).
func TestInspectCacheHitSkipsDecode(t *testing.T) {
	a, b := cacheTestConfig(t, "alice"), cacheTestConfig(t, "bob")
	c := newInspectCache(4)
	key := digest.FromBytes(a)
	if _, err := c.buildInspect(InspectSource{Config: a}, key); err != nil {
		t.Fatal(err)
	}
	got, err := c.buildInspect(InspectSource{Config: b}, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Config.User != "alice" {
		t.Fatalf("User %q: the cached entry was not used", got.Config.User)
	}
	// No key, no cache.
	got, err = c.buildInspect(InspectSource{Config: b}, "")
	if err != nil || got.Config.User != "bob" {
		t.Fatalf("uncached build: %v %q", err, got.Config.User)
	}
	// A config that does not decode is an error and is not cached.
	bad := []byte("{")
	if _, err := c.buildInspect(InspectSource{Config: bad}, digest.FromBytes(bad)); err == nil {
		t.Fatal("a broken config was accepted")
	}
	if c.len() != 1 {
		t.Fatalf("%d entries, want 1", c.len())
	}
}

// The cache keeps at most max entries and evicts the least recently used.
func TestInspectCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newInspectCache(3)
	keys := make([]digest.Digest, 5)
	for i := range keys {
		cfg := cacheTestConfig(t, fmt.Sprint("u", i))
		keys[i] = digest.FromBytes(cfg)
		if _, err := c.buildInspect(InspectSource{Config: cfg}, keys[i]); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			c.get(keys[0]) // 0 is now more recent than 1 and 2
		}
	}
	if c.len() != 3 {
		t.Fatalf("%d entries, max 3", c.len())
	}
	for i, want := range []bool{true, false, false, true, true} {
		if _, ok := c.get(keys[i]); ok != want {
			t.Fatalf("entry %d cached %v, want %v", i, ok, want)
		}
	}
}

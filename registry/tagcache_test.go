package registry

import (
	"context"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestHeadTagFreshnessCacheIsScoped: a tag answer is reused only within
// the max-age asked for, and only by the repository and credential
// identity that got it; max-age 0 always asks.
func TestHeadTagFreshnessCacheIsScoped(t *testing.T) {
	ctx := context.Background()
	f := newFakeRegistry(t)
	f.basicAuth, f.user, f.pass = true, "u", "p"
	d, _ := f.addImage("team/app", "1", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.tags.now = func() time.Time { return now }
	repo := func(user string) *Repository {
		t.Helper()
		n, err := reference.ParseNormalizedNamed(f.host() + "/team/app")
		if err != nil {
			t.Fatal(err)
		}
		var creds Credentials
		if user != "" {
			creds.Auth = &registrytypes.AuthConfig{Username: user, Password: "p", ServerAddress: f.host()}
		}
		r, err := s.Repository(ctx, n, creds)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	head := func(r *Repository, maxAge time.Duration) (TagAnswer, []string) {
		t.Helper()
		f.reset()
		ans, err := r.HeadTag(ctx, "1", maxAge)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Descriptor.Digest != d.Digest {
			t.Fatalf("digest %s, want %s", ans.Descriptor.Digest, d.Digest)
		}
		return ans, f.reset()
	}

	u := repo("u")
	if ans, reqs := head(u, 0); ans.Cached || len(reqs) == 0 {
		t.Fatalf("first answer: cached=%v requests %v; want the registry asked", ans.Cached, reqs)
	}
	if ans, reqs := head(u, time.Minute); !ans.Cached || len(reqs) != 0 {
		t.Fatalf("within max-age: cached=%v requests %v; want no request", ans.Cached, reqs)
	}
	if ans, reqs := head(u, 0); ans.Cached || len(reqs) != 1 || reqs[0] != "HEAD /v2/team/app/manifests/1" {
		t.Fatalf("max-age 0: cached=%v requests %v; want one HEAD", ans.Cached, reqs)
	}
	now = now.Add(2 * time.Minute)
	if ans, _ := head(u, time.Minute); ans.Cached {
		t.Fatal("an answer older than max-age was reused")
	}

	// Another identity on the same repository: the registry decides.
	f.reset()
	if _, err := repo("").HeadTag(ctx, "1", time.Hour); !errdefs.IsUnauthorized(err) {
		t.Fatalf("anonymous within max-age of u's answer: %v, want the registry's refusal", err)
	}
	if got := f.reset(); len(got) == 0 {
		t.Fatal("anonymous was answered from u's cache entry")
	}
}

// TestHeadTagRemembersMissing: not found is an answer (a repeat within
// max-age is free); other errors are never remembered.
func TestHeadTagRemembersMissing(t *testing.T) {
	ctx := context.Background()
	f := newFakeRegistry(t)
	f.addImage("team/app", "1", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	n, _ := reference.ParseNormalizedNamed(f.host() + "/team/app")
	r, err := s.Repository(ctx, n, Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	for i, wantReqs := range []bool{true, false} {
		f.reset()
		_, err := r.HeadTag(ctx, "nope", time.Minute)
		if !errdefs.IsNotFound(err) {
			t.Fatalf("try %d: %v, want not found", i, err)
		}
		if got := f.reset(); (len(got) > 0) != wantReqs {
			t.Fatalf("try %d: requests %v", i, got)
		}
	}
	if _, err := r.HeadTag(ctx, "../etc", time.Minute); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("bad tag: %v", err)
	}
}

func TestTagCacheBoundAndOrder(t *testing.T) {
	c := newTagCache(2)
	t0 := time.Now()
	c.now = func() time.Time { return t0 }
	desc := func(s string) ocispec.Descriptor { return ocispec.Descriptor{Digest: digest.FromString(s)} }
	c.put("s", "a", desc("a"), false, t0)
	c.put("s", "b", desc("b"), false, t0)
	c.get("s", "a", time.Hour) // a is now the most recent
	c.put("s", "c", desc("c"), false, t0)
	if _, ok := c.get("s", "b", time.Hour); ok {
		t.Error("the least recently used entry survived beyond the bound")
	}
	if _, ok := c.get("s", "a", time.Hour); !ok {
		t.Error("a recently used entry was evicted")
	}
	// An older answer arriving late does not replace a newer one.
	c.put("s", "a", desc("old"), false, t0.Add(-time.Second))
	if e, _ := c.get("s", "a", time.Hour); e.desc.Digest != desc("a").Digest {
		t.Error("an older answer replaced a newer one")
	}
	if _, ok := c.get("other scope", "a", time.Hour); ok {
		t.Error("another scope was answered")
	}
	if _, ok := c.get("s", "a", 0); ok {
		t.Error("max-age 0 was answered from the cache")
	}
}

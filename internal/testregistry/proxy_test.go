package testregistry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestTokenProxyBehindFrontWithRedis: a pull-through cache of a token
// registry served by a Front (realm on the remote's host) fetches with its
// credentials, and keeps its blob descriptors in redis when one runs.
func TestTokenProxyBehindFrontWithRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	front := NewFront()
	defer front.Close()
	up := startT(t, Options{Auth: AuthToken, TokenRealm: front.URL + "/token"})
	if err := front.Route(up.URL, up.TokenCounter.URL); err != nil {
		t.Fatal(err)
	}
	img, err := NewImage(ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Client().PushImage(ctx, "team/app", "1", img); err != nil {
		t.Fatal(err)
	}
	opts := Options{ProxyRemoteURL: front.URL, ProxyUsername: up.Username, ProxyPassword: up.Password, ProxyTTL: time.Hour}
	redis, err := StartRedis(t.TempDir())
	switch {
	case errors.Is(err, ErrNoRedis):
		t.Logf("%v: the proxy runs without redis", err)
	case err != nil:
		t.Fatal(err)
	default:
		defer redis.Close()
		opts.Redis = redis.Addr
	}
	proxy := startT(t, opts)
	up.ResetCounters()
	_, _, dgst, err := proxy.Client().GetManifest(ctx, "team/app", "1")
	if err != nil || dgst != img.Manifest.Digest {
		t.Fatalf("through the proxy: %v %s", err, dgst)
	}
	if up.TokenCounter.Total() == 0 || up.Counter.Count("GET manifests") != 1 {
		t.Errorf("upstream: %d token requests, %d manifest GETs; want some and 1", up.TokenCounter.Total(), up.Counter.Count("GET manifests"))
	}
	if redis != nil {
		// A blob read through the proxy puts its descriptor in redis.
		resp, err := http.Get(proxy.URL + "/v2/team/app/blobs/" + img.Config.Digest)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("config through the proxy: %s", resp.Status)
		}
		if n, err := redis.Keys(); err != nil || n == 0 {
			t.Errorf("redis holds %d keys (%v), want the proxy's descriptors", n, err)
		}
	}
}

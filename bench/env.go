//go:build bench

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// env is the registry side of the bench: the real distribution registry in
// token mode with the testregistry counting proxies in front of it and of its
// token server, and an RTT proxy in front of each counter. wharfd and the
// baseline clients talk to the RTT proxies only:
//
//	client → rttProxy(reg) → Counter → registry
//	client → rttProxy(tok) → TokenCounter → token server  (the realm)
type env struct {
	reg      *testregistry.Registry
	regProxy *rttProxy
	tokProxy *rttProxy
	host     string // registry host:port as image names use it (the RTT proxy)
	auth     string // X-Registry-Auth for the default user
	wharfd   string // path of bin/wharfd
	// tokens are the tokens replays fetched, by repository, for a replay
	// of a warm operation that sent no token request.
	tokens map[string]string
}

func newEnv(rtt time.Duration, handshake bool, wharfdBin string) (*env, error) {
	return newEnvRealm(rtt, handshake, wharfdBin, "127.0.0.1")
}

// newEnvRealm is newEnv with the token realm on realmHost: "localhost" for
// crane, which refuses a realm on a loopback IP literal of another port.
func newEnvRealm(rtt time.Duration, handshake bool, wharfdBin, realmHost string) (*env, error) {
	e := &env{wharfd: wharfdBin, tokens: map[string]string{}}
	var err error
	if e.regProxy, err = newRTTProxy(rtt, handshake); err != nil {
		return nil, err
	}
	if e.tokProxy, err = newRTTProxy(rtt, handshake); err != nil {
		return nil, err
	}
	// The registry's realm is in its config, written by testregistry.Start;
	// distribution lets the environment override any config key, so the
	// realm points at our RTT proxy, which forwards to the token counter.
	_, port, _ := strings.Cut(e.tokProxy.Addr(), ":")
	os.Setenv("REGISTRY_AUTH_TOKEN_REALM", "http://"+realmHost+":"+port+"/token")
	e.reg, err = testregistry.Start(testregistry.Options{Auth: testregistry.AuthToken})
	os.Unsetenv("REGISTRY_AUTH_TOKEN_REALM")
	if err != nil {
		return nil, err
	}
	e.regProxy.setTarget(e.reg.Host)
	e.tokProxy.setTarget(e.reg.TokenCounter.Host)
	e.host = e.regProxy.Addr()
	b, _ := json.Marshal(map[string]string{"username": e.reg.Username, "password": e.reg.Password, "serveraddress": e.host})
	e.auth = base64.URLEncoding.EncodeToString(b)
	return e, nil
}

func (e *env) close() {
	e.regProxy.Close()
	e.tokProxy.Close()
	e.reg.Close()
}

// setHandshake makes new connections cost one RTT (true) or nothing.
func (e *env) setHandshake(on bool) {
	e.regProxy.handshake.Store(on)
	e.tokProxy.handshake.Store(on)
}

func (e *env) setRTT(d time.Duration) {
	e.regProxy.setRTT(d)
	e.tokProxy.setRTT(d)
	e.regProxy.dropConns()
	e.tokProxy.dropConns()
}

// counts is what one case cost on the wire.
type counts struct{ reg, tok, regConns, tokConns int }

func (e *env) reset() {
	e.reg.ResetCounters()
	e.regProxy.resetConns()
	e.tokProxy.resetConns()
	e.regProxy.resetBytes()
}

func (e *env) counts() counts {
	return counts{e.reg.Counter.Total(), e.reg.TokenCounter.Total(), int(e.regProxy.newConns()), int(e.tokProxy.newConns())}
}

func (c counts) total() int { return c.reg + c.tok }
func (c counts) conns() int { return c.regConns + c.tokConns }

// client uploads fixtures straight to the counter (no RTT).
func (e *env) client() *testregistry.Client {
	c := e.reg.Client()
	c.HTTP = &http.Client{Timeout: 5 * time.Minute}
	return c
}

// fixtures are the images the bench pushes.
type fixtures struct {
	small     *testregistry.Image   // bench/small:1
	repoImgs  []*testregistry.Image // bench/repo-N:1
	multi     *testregistry.Index   // bench/multi:1, 4 platforms
	big       *testregistry.Image   // bench/big:1, 8 × 32 MiB
	tp        []*testregistry.Image
	newRepos  int
	tpRepos   int
	bigLayers int
}

func pushFixtures(ctx context.Context, e *env, quick bool) (*fixtures, error) {
	f := &fixtures{newRepos: 12, tpRepos: 64, bigLayers: 8}
	c := e.client()
	var err error
	if f.small, err = testregistry.NewImage(testregistry.ImageOptions{Labels: map[string]string{"bench": "small"}}); err != nil {
		return nil, err
	}
	if err := c.PushImage(ctx, "bench/small", "1", f.small); err != nil {
		return nil, err
	}
	// Each new repository holds its own image, so that its config is not
	// in the daemon's content cache already: the full ≤ 3 of the budget.
	for i := 0; i < f.newRepos; i++ {
		img, err := testregistry.NewImage(testregistry.ImageOptions{Labels: map[string]string{"repo": fmt.Sprint(i)}})
		if err != nil {
			return nil, err
		}
		f.repoImgs = append(f.repoImgs, img)
		if err := c.PushImage(ctx, fmt.Sprintf("bench/repo-%d", i), "1", img); err != nil {
			return nil, err
		}
	}
	f.multi, err = testregistry.NewIndex(testregistry.IndexOptions{Platforms: []ocispec.Platform{
		{OS: "linux", Architecture: "amd64"},
		{OS: "linux", Architecture: "arm64", Variant: "v8"},
		{OS: "linux", Architecture: "arm", Variant: "v7"},
		{OS: "linux", Architecture: "s390x"},
	}})
	if err != nil {
		return nil, err
	}
	if err := c.PushIndex(ctx, "bench/multi", "1", f.multi); err != nil {
		return nil, err
	}
	for i := 0; i < f.tpRepos; i++ {
		img, err := testregistry.NewImage(testregistry.ImageOptions{Labels: map[string]string{"n": fmt.Sprint(i)}})
		if err != nil {
			return nil, err
		}
		f.tp = append(f.tp, img)
		if err := c.PushImage(ctx, fmt.Sprintf("bench/tp-%d", i), "1", img); err != nil {
			return nil, err
		}
	}
	size := 32 << 20
	if quick {
		size = 4 << 20
	}
	if f.big, err = bigImage(f.bigLayers, size); err != nil {
		return nil, err
	}
	// Upload the layers in parallel: 256 MiB through one client takes seconds.
	var wg sync.WaitGroup
	errs := make([]error, len(f.big.Layers))
	for i, l := range f.big.Layers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.PutBlob(ctx, "bench/big", l) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if err := c.PushImage(ctx, "bench/big", "1", f.big); err != nil {
		return nil, err
	}
	e.reset()
	return f, nil
}

// bigImage is an OCI image of n uncompressed tar layers of size random bytes
// each (ChaCha8: ~1 GB/s, so 256 MiB is generated in a fraction of a second;
// gzip would cost seconds and change nothing wharf does, which never
// decompresses a pulled layer).
func bigImage(n, size int) (*testregistry.Image, error) {
	img := &testregistry.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}}
	rng := rand.NewChaCha8([32]byte{'w', 'h', 'a', 'r', 'f'})
	cfg := ocispec.Image{Platform: img.Platform, RootFS: ocispec.RootFS{Type: "layers"}, Config: ocispec.ImageConfig{Cmd: []string{"/bin/sh"}}}
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	cfg.Created = &created
	for i := 0; i < n; i++ {
		var buf bytes.Buffer
		buf.Grow(size + 2048)
		tw := tar.NewWriter(&buf)
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("layer%d.bin", i), Mode: 0o644, Size: int64(size), ModTime: created}); err != nil {
			return nil, err
		}
		if _, err := io.CopyN(tw, rng, int64(size)); err != nil {
			return nil, err
		}
		if err := tw.Close(); err != nil {
			return nil, err
		}
		l := testregistry.NewBlob(ocispec.MediaTypeImageLayer, buf.Bytes())
		img.Layers = append(img.Layers, l)
		img.DiffIDs = append(img.DiffIDs, l.Digest)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, digest.Digest(l.Digest))
		cfg.History = append(cfg.History, ocispec.History{Created: &created, CreatedBy: fmt.Sprintf("ADD layer%d.bin /", i)})
	}
	cb, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	img.Config = testregistry.NewBlob(ocispec.MediaTypeImageConfig, cb)
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: img.Config.Descriptor()}
	m.SchemaVersion = 2
	for _, l := range img.Layers {
		m.Layers = append(m.Layers, l.Descriptor())
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	img.Manifest = testregistry.NewBlob(ocispec.MediaTypeImageManifest, mb)
	return img, nil
}

// token fetches a pull token for repos from the token server through its RTT
// proxy, as a plain Go client would.
func (e *env) token(ctx context.Context, hc *http.Client, repos ...string) (string, error) {
	q := url.Values{"service": {e.reg.Token.Service}}
	for _, r := range repos {
		q.Add("scope", "repository:"+r+":pull")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.tokProxy.Addr()+"/token?"+q.Encode(), nil)
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(e.reg.Username, e.reg.Password)
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil || body.Token == "" {
		return "", fmt.Errorf("token: status %d: %v", resp.StatusCode, err)
	}
	return body.Token, nil
}

// manifestAccept is what a client sends on a manifest HEAD.
var manifestAccept = strings.Join([]string{
	ocispec.MediaTypeImageIndex, ocispec.MediaTypeImageManifest,
	testregistry.MediaTypeDockerList, testregistry.MediaTypeDockerManifest,
}, ", ")

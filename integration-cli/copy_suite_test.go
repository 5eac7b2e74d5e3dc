package integration

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/registry"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// CopySuite: `wharf copy` and POST /wharf/images/copy move images between
// two real registries — src with token auth, dst anonymous — through the
// daemon without its store (issue 13).
type CopySuite struct {
	suiteFixture
	src, dst *testregistry.Registry
	d        *Daemon
}

func TestCopySuite(t *testing.T) { t.Parallel(); runSuite(t, &CopySuite{}) }

func (s *CopySuite) SetUpSuite(c *check.C) {
	s.src = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	s.dst = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
}

// copyAPI runs POST /wharf/images/copy with src's credentials in
// X-Registry-Config.
func (s *CopySuite) copyAPI(c *check.C, src, dst string, extra ...string) (Response, StreamLines) {
	q := url.Values{"src": {src}, "dst": {dst}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	cfg, err := json.Marshal(map[string]registry.AuthConfig{
		s.src.Host: {Username: s.src.Username, Password: s.src.Password},
	})
	c.Assert(err, check.IsNil)
	r := s.d.Req(c, http.MethodPost, "/v1.50/wharf/images/copy?"+q.Encode(), nil, "X-Registry-Config", base64.URLEncoding.EncodeToString(cfg))
	if r.Status != http.StatusOK {
		return r, nil
	}
	return r, r.Lines(c)
}

// dstDigest is the digest dst serves for repo:ref, "" when it has none.
func dstDigest(c *check.C, reg *testregistry.Registry, repo, ref string) string {
	ctx, cancel := fixtureCtx()
	defer cancel()
	_, _, d, err := reg.Client().GetManifest(ctx, repo, ref)
	if err != nil {
		return ""
	}
	return d
}

// hasBlob asks an anonymous registry directly whether it holds a blob.
func hasBlob(c *check.C, reg *testregistry.Registry, repo, dgst string) bool {
	resp, err := http.Head(reg.DirectURL + "/v2/" + repo + "/blobs/" + dgst)
	c.Assert(err, check.IsNil)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// openUploads counts the upload sessions reg holds open: the _uploads/<id>
// directories with a startedat file. A cancelled session loses it (and its
// data); distribution then writes the hash state of the DELETE request
// back, so an empty hashstates directory outlives every DELETE.
func openUploads(reg *testregistry.Registry) int {
	n := 0
	_ = filepath.WalkDir(reg.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "startedat" && filepath.Base(filepath.Dir(filepath.Dir(p))) == "_uploads" {
			n++
		}
		return nil
	})
	return n
}

func auxInt(aux map[string]any, k string) int {
	f, _ := aux[k].(float64)
	return int(f)
}

// The CLI with credentials from `wharf login`: a single image from the
// token registry to the anonymous one, byte for byte, and the credentials
// never reach dst; the daemon's store stays empty.
func (s *CopySuite) TestCopySingleImageWithStoredCredentials(c *check.C) {
	img := pushImage(c, s.src, "copy/single", "1", testregistry.ImageOptions{Layers: 3})
	s.d.WharfIn(c, []byte(s.src.Password+"\n"), "login", s.src.Host, "-u", s.src.Username, "--password-stdin")
	defer s.d.Wharf(c, "logout", s.src.Host)
	s.dst.ResetCounters()

	out := s.d.WharfOK(c, "copy", "-q", s.src.Host+"/copy/single:1", s.dst.Host+"/copy/single:one")
	c.Assert(strings.TrimSpace(out.Stdout), check.Equals, s.dst.Host+"/copy/single:one@"+img.Manifest.Digest)
	c.Assert(dstDigest(c, s.dst, "copy/single", "one"), check.Equals, img.Manifest.Digest)
	for _, l := range img.Layers {
		c.Assert(hasBlob(c, s.dst, "copy/single", l.Digest), check.Equals, true)
	}
	for _, h := range s.dst.Counter.HeaderValues("Authorization") {
		c.Assert(h, check.Equals, "", check.Commentf("src's credentials reached dst"))
	}
	var imgs []any
	s.d.Get(c, "/v1.50/images/json").JSON(c, &imgs)
	c.Assert(imgs, check.HasLen, 0, check.Commentf("copy wrote to the local store"))
	c.Assert(openUploads(s.dst), check.Equals, 0)

	// Again: every blob is already there (HEAD), nothing is uploaded.
	s.dst.ResetCounters()
	again := s.d.WharfOK(c, "copy", s.src.Host+"/copy/single:1", s.dst.Host+"/copy/single:one")
	c.Assert(again.Stdout, check.Matches, `(?s).*4 blobs: 4 existed, 0 mounted, 0 uploaded.*`)
	c.Assert(s.dst.Counter.Count("PUT uploads"), check.Equals, 0, check.Commentf("%s", s.dst.Counter.Summary()))
}

// A multi-platform index is copied whole by default: the index bytes, so
// the digest at dst is src's; by digest to a digest-only destination.
func (s *CopySuite) TestCopyIndexAllPlatforms(c *check.C) {
	ix := pushIndex(c, s.src, "copy/multi", "1", testregistry.IndexOptions{Attestation: true})
	_, lines := s.copyAPI(c, s.src.Host+"/copy/multi:1", s.dst.Host+"/copy/multi:1")
	c.Assert(lines.Err(), check.Equals, "")
	c.Assert(dstDigest(c, s.dst, "copy/multi", "1"), check.Equals, ix.Digest())
	c.Assert(lines.Aux()["Digest"], check.Equals, ix.Digest())
	for _, im := range append(ix.Images, ix.Attestation) {
		c.Assert(dstDigest(c, s.dst, "copy/multi", im.Manifest.Digest), check.Equals, im.Manifest.Digest)
	}

	// SRC by digest, DST by digest only: pushed by digest, no tag.
	_, lines = s.copyAPI(c, s.src.Host+"/copy/multi@"+ix.Digest(), s.dst.Host+"/copy/bydigest@"+ix.Digest(), "all-platforms", "1")
	c.Assert(lines.Err(), check.Equals, "")
	c.Assert(dstDigest(c, s.dst, "copy/bydigest", ix.Digest()), check.Equals, ix.Digest())
	ctx, cancel := fixtureCtx()
	defer cancel()
	tags, err := listTags(ctx, s.dst, "copy/bydigest")
	c.Assert(err, check.IsNil)
	c.Assert(tags, check.HasLen, 0, check.Commentf("%v", tags))

	// A destination digest that is not what the copy writes is refused first.
	r, _ := s.copyAPI(c, s.src.Host+"/copy/multi:1", s.dst.Host+"/copy/wrong@"+ix.Images[0].Manifest.Digest)
	c.Assert(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r))
}

// One platform: the platform manifest alone is copied, and its digest is
// what dst holds; the other platform's manifest is not there.
func (s *CopySuite) TestCopyOnePlatform(c *check.C) {
	ix := pushIndex(c, s.src, "copy/oneplat", "1", testregistry.IndexOptions{})
	_, lines := s.copyAPI(c, s.src.Host+"/copy/oneplat:1", s.dst.Host+"/copy/oneplat:arm", "platform", "linux/arm64")
	c.Assert(lines.Err(), check.Equals, "")
	c.Assert(dstDigest(c, s.dst, "copy/oneplat", "arm"), check.Equals, ix.Images[1].Manifest.Digest)
	c.Assert(dstDigest(c, s.dst, "copy/oneplat", ix.Images[0].Manifest.Digest), check.Equals, "")
	c.Assert(hasBlob(c, s.dst, "copy/oneplat", ix.Images[0].Layers[0].Digest), check.Equals, false)
}

// Same registry: every blob is mounted from the source repository; no blob
// byte is read from or written to the registry.
func (s *CopySuite) TestCopySameRegistryMounts(c *check.C) {
	img := pushImage(c, s.src, "copy/mountsrc", "1", testregistry.ImageOptions{Layers: 2})
	s.src.ResetCounters()
	cfg, _ := json.Marshal(map[string]registry.AuthConfig{s.src.Host: {Username: s.src.Username, Password: s.src.Password}})
	q := url.Values{"src": {s.src.Host + "/copy/mountsrc:1"}, "dst": {s.src.Host + "/copy/mountdst:1"}}
	r := s.d.Req(c, http.MethodPost, "/v1.50/wharf/images/copy?"+q.Encode(), nil, "X-Registry-Config", base64.URLEncoding.EncodeToString(cfg))
	lines := r.Lines(c)
	c.Assert(lines.Err(), check.Equals, "")
	aux := lines.Aux()
	c.Assert(auxInt(aux, "Mounted"), check.Equals, 3, check.Commentf("%v", aux))
	c.Assert(auxInt(aux, "BytesUploaded"), check.Equals, 0)
	for _, class := range []string{"GET blobs", "PUT uploads", "PATCH uploads"} {
		c.Assert(s.src.Counter.Count(class), check.Equals, 0, check.Commentf("%s: %s", class, s.src.Counter.Summary()))
	}
	c.Assert(dstDigest(c, s.src, "copy/mountdst", "1"), check.Equals, img.Manifest.Digest)
	c.Assert(openUploads(s.src), check.Equals, 0)
}

// A destination that fails one blob upload mid-copy: the copy fails, tags
// nothing and leaves no upload session open; the retry uploads only the
// blob dst lacks and completes.
func (s *CopySuite) TestCopyResumesAfterDestinationFailure(c *check.C) {
	img := pushImage(c, s.src, "copy/resume", "1", testregistry.ImageOptions{Layers: 4, LayerSize: 64 << 10})
	victim := img.Layers[1].Digest
	others := len(img.Layers) // the other layers and the config
	var (
		mu       sync.Mutex
		done     int
		failing  = true
		allOther = make(chan struct{})
	)
	isPut := func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blobs/uploads/")
	}
	proxy, err := hostile.NewHookProxy(s.dst.URL,
		func(w http.ResponseWriter, r *http.Request) bool {
			mu.Lock()
			fail := failing && isPut(r) && r.URL.Query().Get("digest") == victim
			mu.Unlock()
			if !fail {
				return false
			}
			// Fail only once the other blobs are in, so the retry has
			// something to skip; bounded in case the copy gives up first.
			select {
			case <-allOther:
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<10))
			hostile.WriteError(w, http.StatusInternalServerError, "UNKNOWN", "injected upload failure")
			return true
		},
		func(r *http.Request, status int) {
			if !isPut(r) || status != http.StatusCreated {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if done++; done == others {
				close(allOther)
			}
		})
	c.Assert(err, check.IsNil)
	defer proxy.Close()
	dstName := proxy.Host + "/copy/resume:1"

	_, lines := s.copyAPI(c, s.src.Host+"/copy/resume:1", dstName)
	c.Assert(lines.Err(), check.Matches, `(?s).*`+victim[7:19]+`.*`)
	c.Assert(dstDigest(c, s.dst, "copy/resume", "1"), check.Equals, "", check.Commentf("a failed copy tagged dst"))
	c.Assert(hasBlob(c, s.dst, "copy/resume", victim), check.Equals, false)
	c.Assert(openUploads(s.dst), check.Equals, 0, check.Commentf("the failed upload's session was left open"))

	mu.Lock()
	failing = false
	mu.Unlock()
	s.dst.ResetCounters()
	_, lines = s.copyAPI(c, s.src.Host+"/copy/resume:1", dstName)
	c.Assert(lines.Err(), check.Equals, "")
	aux := lines.Aux()
	c.Assert(auxInt(aux, "Uploaded"), check.Equals, 1, check.Commentf("%v", aux))
	c.Assert(auxInt(aux, "Existed"), check.Equals, others, check.Commentf("%v", aux))
	c.Assert(s.dst.Counter.Count("PUT uploads"), check.Equals, 1, check.Commentf("%s", s.dst.Counter.Summary()))
	c.Assert(dstDigest(c, s.dst, "copy/resume", "1"), check.Equals, img.Manifest.Digest)
}

// A source that serves a layer whose bytes do not match its digest: the
// copy is refused, dst gets neither the tag nor the blob, and no upload
// session is left open.
func (s *CopySuite) TestCopyLyingSourceRefused(c *check.C) {
	img, err := testregistry.NewImage(testregistry.ImageOptions{Layers: 2, LayerSize: 32 << 10})
	c.Assert(err, check.IsNil)
	bad := img.Layers[0]
	liar, err := hostile.Start(hostile.Options{Repo: "lying/app", Tag: "1", Image: img, Fault: func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
		if req.Kind != hostile.KindBlob || req.Ref != bad.Digest || r.Method != http.MethodGet {
			return false
		}
		forged := append([]byte(nil), bad.Data...)
		forged[len(forged)/2] ^= 0xff // same size, other bytes
		hostile.WriteContent(w, r, bad.MediaType, forged, bad.Digest)
		return true
	}})
	c.Assert(err, check.IsNil)
	defer liar.Close()

	s.dst.ResetCounters()
	r, lines := s.copyAPI(c, liar.Ref(), s.dst.Host+"/copy/lied:1")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Assert(lines.Err(), check.Matches, `(?s).*digest.*`)
	c.Assert(dstDigest(c, s.dst, "copy/lied", "1"), check.Equals, "")
	c.Assert(hasBlob(c, s.dst, "copy/lied", bad.Digest), check.Equals, false)
	c.Assert(openUploads(s.dst), check.Equals, 0, check.Commentf("%s", strings.Join(s.dst.RequestLog(), "\n")))
}

// listTags lists a repository's tags on an anonymous registry.
func listTags(ctx context.Context, reg *testregistry.Registry, repo string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, reg.DirectURL+"/v2/"+repo+"/tags/list", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tags: %s", resp.Status)
	}
	var body struct {
		Tags []string `json:"tags"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body)
	return body.Tags, err
}

// Bad requests are refused before any registry is asked.
func (s *CopySuite) TestCopyRefusesBadRequests(c *check.C) {
	r := s.d.Wharf(c, "copy", "--platform", "linux/amd64", "--all-platforms", s.src.Host+"/a:1", s.dst.Host+"/a:1")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0)
	c.Assert(r.Stderr, check.Matches, `(?s).*--platform and --all-platforms.*`)
	r = s.d.Wharf(c, "copy", s.src.Host+"/a:1")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0)
	s.src.ResetCounters()
	for _, q := range []string{"src=" + s.src.Host + "/a:1", "src=a&dst=UPPER/Case", "src=a&dst=b&platform=linux/amd64&all-platforms=1"} {
		resp := s.d.Req(c, http.MethodPost, "/v1.50/wharf/images/copy?"+q, nil)
		c.Assert(resp.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s: %s", q, resp))
	}
	resp := s.d.Req(c, http.MethodPost, "/v1.50/wharf/images/copy?src=a&dst=b", nil, "X-Registry-Config", "!!!")
	c.Assert(resp.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", resp))
	c.Assert(s.src.Requests(), check.Equals, 0)
}

package integration

import (
	"errors"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// UploadResumeSuite: a PATCH cut mid-body (issue 20's uploads). A hook
// proxy in front of the real registry cuts the first PATCHes of each
// upload session after cutAfter bytes; push and copy resume from the
// offset the registry reports, the bytes that crossed the proxy stay
// within 1.10× the blobs, and no upload session is left open.
type UploadResumeSuite struct {
	suiteFixture
	src, dst *testregistry.Registry
	d        *Daemon
}

func TestUploadResumeSuite(t *testing.T) { t.Parallel(); runSuite(t, &UploadResumeSuite{}) }

// cutAfter: the bytes of a PATCH's body the proxy lets through before it
// cuts; the layer is 8 MiB, so three cuts still leave bytes to send.
const (
	cutAfter  = 2 << 20
	layerSize = 8 << 20
)

func (s *UploadResumeSuite) SetUpSuite(c *check.C) {
	s.src = s.startRegistry(c, testregistry.Options{})
	s.dst = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
}

// cuttingProxy fronts dst. Each upload session's first `cuts` PATCHes are
// cut after cutAfter bytes (the proxy stops reading and the registry's
// request ends mid-body); lies replace the registry's status answers. It
// counts the PATCH bytes that crossed it.
type cuttingProxy struct {
	*hostile.HookProxy
	mu    sync.Mutex
	cuts  int
	after int64 // bytes of a cut PATCH let through
	// lies: the Range the proxy answers itself to the status GET of that
	// number (1: the first), in place of the registry.
	lies     map[int]string
	statuses int
	// lostOnce: the first status GET is answered 404 (the status is lost).
	lostOnce bool
	cut      map[string]int  // session id → PATCHes to be cut
	wasCut   map[string]bool // session id → a PATCH of it was cut
	sent     int64           // PATCH body bytes read by the proxy
	patches  int
	// putCuts: the PUTs with a body (a small blob's whole upload) still to
	// cut after half their body; putsCut counts those cut.
	putCuts, putsCut int
}

func (s *UploadResumeSuite) startCuttingProxy(c *check.C, cuts int, lies map[int]string) *cuttingProxy {
	p := &cuttingProxy{cuts: cuts, after: cutAfter, lies: lies, cut: map[string]int{}, wasCut: map[string]bool{}}
	var err error
	p.HookProxy, err = hostile.NewHookProxy(s.dst.URL, p.before, nil)
	c.Assert(err, check.IsNil)
	s.closeAtEnd(func() { p.Close() })
	return p
}

var errCut = errors.New("cut by the test proxy")

func (p *cuttingProxy) before(w http.ResponseWriter, r *http.Request) bool {
	if !strings.Contains(r.URL.Path, "/blobs/uploads/") {
		return false
	}
	id := path.Base(r.URL.Path)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch r.Method {
	case http.MethodPatch:
		p.patches++
		cb := &countingBody{r: r.Body, p: p, id: id, limit: -1}
		if p.cut[id] < p.cuts {
			p.cut[id]++
			cb.limit = p.after
		}
		r.Body = cb
	case http.MethodPut:
		if r.ContentLength > 0 && p.putCuts > 0 {
			p.putCuts--
			p.putsCut++
			r.Body = &countingBody{r: r.Body, p: p, id: id, limit: r.ContentLength / 2}
		}
	case http.MethodGet:
		if p.lostOnce {
			p.lostOnce = false
			hostile.WriteError(w, http.StatusNotFound, "BLOB_UPLOAD_UNKNOWN", "status lost by the test proxy")
			return true
		}
		p.statuses++
		if rng, ok := p.lies[p.statuses]; ok {
			w.Header().Set("Range", rng)
			w.WriteHeader(http.StatusNoContent)
			return true
		}
	}
	return false
}

func (p *cuttingProxy) counts() (sent int64, patches int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent, p.patches
}

// countingBody counts what the proxy reads of a PATCH and, past limit
// (-1: none), fails: the reverse proxy then aborts its request to the
// registry mid-body and answers 502.
type countingBody struct {
	r     io.ReadCloser
	p     *cuttingProxy
	id    string
	n     int64
	limit int64
}

func (b *countingBody) Read(q []byte) (int, error) {
	if b.limit >= 0 {
		if b.n >= b.limit {
			b.p.mu.Lock()
			b.p.wasCut[b.id] = true
			b.p.mu.Unlock()
			return 0, errCut
		}
		if left := b.limit - b.n; int64(len(q)) > left {
			q = q[:left]
		}
	}
	n, err := b.r.Read(q)
	b.n += int64(n)
	b.p.mu.Lock()
	b.p.sent += int64(n)
	b.p.mu.Unlock()
	return n, err
}

func (b *countingBody) Close() error { return b.r.Close() }

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}

// blobBytes is what an upload of img sends at least: its layers and config.
func blobBytes(img *testregistry.Image) int64 {
	return img.Size() + int64(len(img.Config.Data))
}

// pushThrough pulls a fresh 8 MiB image from src and pushes it to repo
// through p: the push's error ("" on success).
func (s *UploadResumeSuite) pushThrough(c *check.C, p *cuttingProxy, repo string) (*testregistry.Image, string) {
	img := pushImage(c, s.src, repo, "1", testregistry.ImageOptions{LayerSize: layerSize})
	_, lines := s.d.Pull(c, s.src.Host+"/"+repo, "1", "")
	c.Assert(lines.Err(), check.Equals, "")
	r := s.d.Req(c, http.MethodPost, "/v1.50/images/"+s.src.Host+"/"+repo+":1/tag?repo="+p.Host+"/"+repo+"&tag=1", nil)
	c.Assert(r.Status, check.Equals, http.StatusCreated)
	_, lines = s.d.Push(c, p.Host+"/"+repo, "1", "")
	return img, lines.Err()
}

func (s *UploadResumeSuite) checkResumed(c *check.C, p *cuttingProxy, img *testregistry.Image, repo string, cuts int) {
	c.Check(dstDigest(c, s.dst, repo, "1"), check.Equals, img.Manifest.Digest)
	sent, patches := p.counts()
	ratio := float64(sent) / float64(blobBytes(img))
	c.Logf("%d cut(s): %d PATCHes, %d bytes through the proxy for %d bytes of blobs (%.3f×)", cuts, patches, sent, blobBytes(img), ratio)
	// The layer's PATCHes: one, and one more per cut. The config (under
	// registry's 1 MiB threshold) goes in one PUT with its body, no PATCH.
	c.Check(patches >= 1+cuts, check.Equals, true, check.Commentf("%d PATCHes: the cuts never happened", patches))
	c.Check(ratio <= 1.10, check.Equals, true, check.Commentf("%.3f× the blobs crossed the proxy", ratio))
	c.Check(openUploads(s.dst), check.Equals, 0, check.Commentf("upload sessions left open"))
}

// One cut PATCH: before issue 20 the push failed ("502 Bad Gateway").
func (s *UploadResumeSuite) TestPushResumesAfterOneCutPatch(c *check.C) {
	p := s.startCuttingProxy(c, 1, nil)
	img, msg := s.pushThrough(c, p, "resume/push1")
	c.Assert(msg, check.Equals, "", check.Commentf("%s", logTail(s.d)))
	s.checkResumed(c, p, img, "resume/push1", 1)
}

func (s *UploadResumeSuite) TestPushResumesAfterThreeCutPatches(c *check.C) {
	p := s.startCuttingProxy(c, 3, nil)
	img, msg := s.pushThrough(c, p, "resume/push3")
	c.Assert(msg, check.Equals, "", check.Commentf("%s", logTail(s.d)))
	s.checkResumed(c, p, img, "resume/push3", 3)
}

// Copy's DST side: SRC's blob is asked again with Range from the offset
// DST reports.
func (s *UploadResumeSuite) TestCopyResumesAfterCutPatches(c *check.C) {
	for _, cuts := range []int{1, 3} {
		repo := "resume/copy" + itoa(int64(cuts))
		p := s.startCuttingProxy(c, cuts, nil)
		img := pushImage(c, s.src, repo, "1", testregistry.ImageOptions{LayerSize: layerSize})
		s.src.ResetCounters()
		out := s.d.Wharf(c, "copy", s.src.Host+"/"+repo+":1", p.Host+"/"+repo+":1")
		c.Assert(out.ExitCode, check.Equals, 0, check.Commentf("%s\n%s", out, logTail(s.d)))
		s.checkResumed(c, p, img, repo, cuts)
		ranges := 0
		for _, v := range s.src.Counter.HeaderValues("Range") {
			if strings.HasPrefix(v, "bytes=") {
				ranges++
			}
		}
		c.Check(ranges, check.Equals, cuts, check.Commentf("SRC was not asked from the offset: %s", s.src.Counter.Summary()))
	}
}

// A registry whose offset goes back (the second status: 1 KiB after 2 MiB
// were kept) is not believed either: a new session, nothing left open.
func (s *UploadResumeSuite) TestAnOffsetGoingBackRestartsTheSession(c *check.C) {
	p := s.startCuttingProxy(c, 2, map[int]string{2: "0-1023"})
	img, msg := s.pushThrough(c, p, "resume/back")
	c.Assert(msg, check.Equals, "", check.Commentf("%s", logTail(s.d)))
	c.Check(dstDigest(c, s.dst, "resume/back", "1"), check.Equals, img.Manifest.Digest)
	c.Check(openUploads(s.dst), check.Equals, 0, check.Commentf("upload sessions left open"))
	p.mu.Lock()
	sessions := len(p.wasCut)
	p.mu.Unlock()
	c.Check(sessions, check.Equals, 2, check.Commentf("%d sessions cut: no restart", sessions))
}

// A registry that reports more than was sent (a Range past the cut) is not
// believed: the session is cancelled and the upload starts over in a new
// one, which succeeds; nothing is left open.
func (s *UploadResumeSuite) TestAnOffsetPastWhatWasSentRestartsTheSession(c *check.C) {
	p := s.startCuttingProxy(c, 1, map[int]string{1: "0-" + itoa(layerSize-1)})
	img, msg := s.pushThrough(c, p, "resume/lie")
	c.Assert(msg, check.Equals, "", check.Commentf("%s", logTail(s.d)))
	c.Check(dstDigest(c, s.dst, "resume/lie", "1"), check.Equals, img.Manifest.Digest)
	c.Check(openUploads(s.dst), check.Equals, 0, check.Commentf("upload sessions left open"))
	p.mu.Lock()
	sessions := len(p.wasCut)
	p.mu.Unlock()
	c.Check(sessions, check.Equals, 2, check.Commentf("%d sessions cut: no restart", sessions))
}

// A registry that takes nothing of any PATCH: three PATCHes per session
// (maxStalledPatches), then the push fails naming the registry, and every
// session is cancelled.
func (s *UploadResumeSuite) TestAPatchThatNeverMovesGivesUpAfterThree(c *check.C) {
	p := s.startCuttingProxy(c, 1000, nil)
	p.after = 0
	_, msg := s.pushThrough(c, p, "resume/stuck")
	c.Check(msg, check.Matches, `(?s)push (layer|config) sha256:.*`+regexpQuote(p.Host)+`.*502.*`)
	p.mu.Lock()
	for id, n := range p.cut {
		c.Check(n, check.Equals, 3, check.Commentf("session %s: %d PATCHes", id, n))
	}
	p.mu.Unlock()
	c.Check(openUploads(s.dst), check.Equals, 0, check.Commentf("upload sessions left open"))
}

// A cut PATCH whose status cannot be read (404): the push fails with the
// PATCH's error, and the session — whose Location still names offset 0,
// which distribution refuses for a DELETE — is cancelled all the same.
func (s *UploadResumeSuite) TestALostStatusFailsAndLeavesNoSession(c *check.C) {
	p := s.startCuttingProxy(c, 1, nil)
	p.lostOnce = true
	_, msg := s.pushThrough(c, p, "resume/lost")
	c.Check(msg, check.Matches, `(?s)push layer sha256:.*502.*`)
	c.Check(openUploads(s.dst), check.Equals, 0, check.Commentf("upload sessions left open"))
}

// A small blob's PUT (its whole body: the config) cut halfway by the proxy,
// so the real registry wrote half of it into the session: the push
// completes — the transport's replay into that session is refused, or
// the session is cancelled and a new one carries the blob — and no
// session is left open.
func (s *UploadResumeSuite) TestACutSmallBlobPutRestartsAndLeavesNoSession(c *check.C) {
	p := s.startCuttingProxy(c, 0, nil)
	p.putCuts = 1
	img, msg := s.pushThrough(c, p, "resume/smallput")
	c.Assert(msg, check.Equals, "", check.Commentf("%s", logTail(s.d)))
	c.Check(dstDigest(c, s.dst, "resume/smallput", "1"), check.Equals, img.Manifest.Digest)
	p.mu.Lock()
	cut := p.putsCut
	p.mu.Unlock()
	c.Check(cut, check.Equals, 1, check.Commentf("the PUT was never cut"))
	c.Check(openUploads(s.dst), check.Equals, 0, check.Commentf("upload sessions left open"))
}

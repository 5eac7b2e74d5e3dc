package integration

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// PushReceiptSuite: a registry that answers a blob upload with 201 but
// names another digest in Docker-Content-Digest (it stored something else)
// must not see the blob reported as pushed (issue 10, finding 11). The
// registry is the real one behind a proxy that rewrites that one header.
type PushReceiptSuite struct {
	suiteFixture
	reg   *testregistry.Registry
	proxy *http.Server
	host  string
	d     *Daemon
}

func TestPushReceiptSuite(t *testing.T) { t.Parallel(); runSuite(t, &PushReceiptSuite{}) }

// otherDigest is what the lying registry claims to have stored.
const otherDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

func (s *PushReceiptSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	target, err := url.Parse(s.reg.DirectURL)
	c.Assert(err, check.IsNil)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		req := resp.Request
		if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/blobs/uploads/") && resp.StatusCode == http.StatusCreated {
			resp.Header.Set("Docker-Content-Digest", otherDigest)
		}
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	c.Assert(err, check.IsNil)
	s.host = ln.Addr().String()
	s.proxy = &http.Server{Handler: rp}
	go s.proxy.Serve(ln)
	s.closeAtEnd(func() { s.proxy.Close() })
	s.d = s.startDaemon(c)
}

func (s *PushReceiptSuite) TestBlobReceiptWithAnotherDigestFailsThePush(c *check.C) {
	name := s.host + "/receipt/app"
	s.d.Import(c, name+":1")
	r, lines := s.d.Push(c, name, "1", "")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	c.Assert(lines.Err(), check.Matches, "(?s).*digest mismatch.*", check.Commentf("push stream: %v", lines.Texts()))
	c.Assert(lines.Has("Pushed"), check.Equals, false, check.Commentf("a blob the registry did not store was shown as pushed: %v", lines.Texts()))
	// No tag at the registry points at the image.
	resp, err := http.Get(s.reg.DirectURL + "/v2/receipt/app/manifests/1")
	c.Assert(err, check.IsNil)
	resp.Body.Close()
	c.Assert(resp.StatusCode, check.Equals, http.StatusNotFound)
}

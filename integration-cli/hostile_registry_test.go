package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// HostileRegistrySuite points wharfd at hand-written registries that lie,
// stall, flood and break (internal/hostile). Every case must end in an
// error that names the registry and the problem, store nothing, and leave
// wharfd serving with bounded memory.
type HostileRegistrySuite struct{ hostileFixture }

func TestHostileRegistrySuite(t *testing.T) { t.Parallel(); runSuite(t, &HostileRegistrySuite{}) }

// HostileNetworkSuite and HostileTrickleSuite are the cases that wait on
// wharfd's timeouts and retries (most of the hostile seconds), each
// against a daemon of its own, so that they run beside
// HostileRegistrySuite instead of after it.
type HostileNetworkSuite struct{ hostileFixture }

func TestHostileNetworkSuite(t *testing.T) { t.Parallel(); runSuite(t, &HostileNetworkSuite{}) }

type HostileTrickleSuite struct{ hostileFixture }

func TestHostileTrickleSuite(t *testing.T) { t.Parallel(); runSuite(t, &HostileTrickleSuite{}) }

// hostileFixture is one wharfd for a hostile suite, its leak baseline and
// the case runner.
type hostileFixture struct {
	suiteFixture
	d    *Daemon
	base leakBaseline
}

// hostileTimeout shortens wharfd's registry timeouts (response headers and
// the slow-body window, 30 s by default) so silent and trickling
// registries are met in seconds.
const hostileTimeout = 2 * time.Second

// maxHWMKiB bounds wharfd's peak resident memory across the suite: endless
// bodies are cut at 4-8 MiB per read, so a leak of them would show as
// hundreds of MiB; wharfd itself starts around 20-30 MiB.
const maxHWMKiB = 160 << 10

func (s *hostileFixture) SetUpSuite(c *check.C) {
	s.d = s.startDaemon(c, "--registry-timeout", hostileTimeout.String())
	s.base = s.d.leakBaseline(c)
}

func (s *hostileFixture) TearDownSuite(c *check.C) {
	defer s.suiteFixture.TearDownSuite(c)
	if s.d != nil {
		// Every hostile server is closed by now: whatever wharfd still
		// holds (goroutines, sockets, files) is a leak of an error path.
		s.d.checkBackToBaseline(c, s.base)
	}
}

// hcase is one misbehaviour. fault and prep see the image the registry
// serves. remote and pull are what the client's error must contain besides
// the registry host; "ok" means the operation must succeed; "" skips it.
type hcase struct {
	name         string
	token        bool
	tls          bool // the registry serves HTTPS
	fault        func(img *testregistry.Image) hostile.Fault
	prep         func(r *hostile.Registry)
	remote, pull string
	// forbidden are substrings no request path may contain (invalid digests
	// must be refused before any URL is built from them).
	forbidden []string
	check     func(c *check.C, r *hostile.Registry)
	// byDigest inspects and pulls NAME@<manifest digest> instead of the tag.
	byDigest bool
}

const ok = "ok"

func (s *hostileFixture) run(c *check.C, cases []hcase) {
	for _, tc := range cases {
		s.runOne(c, tc)
	}
}

func (s *hostileFixture) runOne(c *check.C, tc hcase) {
	img, err := testregistry.NewImage(testregistry.ImageOptions{LayerSize: 4096})
	c.Assert(err, check.IsNil)
	opts := hostile.Options{Image: img, Token: tc.token, TLS: tc.tls}
	if tc.fault != nil {
		opts.Fault = tc.fault(img)
	}
	reg, err := hostile.Start(opts)
	c.Assert(err, check.IsNil)
	defer reg.Close()
	if tc.prep != nil {
		tc.prep(reg)
	}
	d := s.d
	before := d.storeState(c)
	cm := func(op, msg string) check.CommentInterface {
		return check.Commentf("case %q %s: %s\n--- wharfd log tail ---\n%s", tc.name, op, msg, logTail(d))
	}
	if tc.remote != "" {
		ref := reg.Ref()
		if tc.byDigest {
			ref = reg.Name() + "@" + reg.Image.Manifest.Digest
		}
		r := d.remoteInspect(c, ref, "")
		c.Logf("%s: remote inspect: %d %s", tc.name, r.Status, r.Message())
		if tc.remote == ok {
			c.Check(r.Status, check.Equals, http.StatusOK, cm("remote inspect", r.String()))
		} else {
			c.Check(r.Status >= 400, check.Equals, true, cm("remote inspect", r.String()))
			c.Check(r.Message(), check.Matches, "(?s).*"+regexpQuote(reg.Host)+".*", cm("remote inspect names the registry", r.Message()))
			c.Check(strings.Contains(r.Message(), tc.remote), check.Equals, true, cm("remote inspect names the problem "+tc.remote, r.Message()))
		}
	}
	if tc.pull != "" {
		tag := reg.Tag
		if tc.byDigest {
			tag = reg.Image.Manifest.Digest
		}
		msg := d.pullMessage(c, reg.Name(), tag, "")
		c.Logf("%s: pull: %s", tc.name, msg)
		if tc.pull == ok {
			c.Check(msg, check.Equals, "", cm("pull", msg))
		} else {
			c.Check(strings.Contains(msg, reg.Host), check.Equals, true, cm("pull names the registry", msg))
			c.Check(strings.Contains(msg, tc.pull), check.Equals, true, cm("pull names the problem "+tc.pull, msg))
			c.Check(d.storeState(c), check.DeepEquals, before, cm("pull stored something", msg))
		}
	}
	for _, seen := range reg.Seen() {
		for _, f := range tc.forbidden {
			c.Check(strings.Contains(seen.Path, f), check.Equals, false, cm("request built from an invalid digest", seen.Method+" "+seen.Path))
		}
	}
	if tc.check != nil {
		tc.check(c, reg)
	}
	if tc.pull == ok {
		// Leave the store as it was for the next case.
		ref := reg.Ref()
		if tc.byDigest {
			ref = reg.Name() + "@" + reg.Image.Manifest.Digest
		}
		r := d.oneShot(c, http.MethodDelete, "/v1.50/images/"+ref)
		c.Check(r.Status, check.Equals, http.StatusOK, cm("rmi", r.String()))
	}
	d.ping(c)
}

// onManifest / onBlob build faults for one kind of request.
func onManifest(f func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool) func(*testregistry.Image) hostile.Fault {
	return func(*testregistry.Image) hostile.Fault {
		return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
			return req.Kind == hostile.KindManifest && f(w, r, req)
		}
	}
}

// onBlob answers requests for the blob pick chooses (config or first layer).
func onBlob(pick func(img *testregistry.Image) testregistry.Blob, f func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool) func(*testregistry.Image) hostile.Fault {
	return func(img *testregistry.Image) hostile.Fault {
		b := pick(img)
		return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
			return req.Kind == hostile.KindBlob && req.Ref == b.Digest && f(w, r, b)
		}
	}
}

func config(img *testregistry.Image) testregistry.Blob { return img.Config }
func layer(img *testregistry.Image) testregistry.Blob  { return img.Layers[0] }

// manifestJSON renders a manifest with the given config and layer descriptors.
func manifestJSON(cfg ocispec.Descriptor, layers ...ocispec.Descriptor) []byte {
	b, _ := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: cfg, Layers: layers,
	})
	return b
}

func flipped(b []byte) []byte {
	out := append([]byte(nil), b...)
	for i := range out {
		out[i] ^= 0xff
	}
	return out
}

func (s *HostileRegistrySuite) TestOversizedAndEndlessBodies(c *check.C) {
	big := func(w http.ResponseWriter, r *http.Request, status int, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	}
	hugeErr := []byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"` + strings.Repeat("a", 1<<20) + `"}]}`)
	hugeToken := []byte(`{"token":"` + strings.Repeat("t", 200<<10) + `"}`)
	s.run(c, []hcase{
		{
			name: "manifest over 4 MiB",
			fault: func(img *testregistry.Image) hostile.Fault {
				body := hostile.Padded(img.Manifest.Data, 5<<20)
				d := testregistry.NewBlob(img.Manifest.MediaType, body).Digest
				return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
					if req.Kind != hostile.KindManifest {
						return false
					}
					hostile.WriteContent(w, r, img.Manifest.MediaType, body, d)
					return true
				}
			},
			remote: "larger than 4194304 bytes", pull: "larger than 4194304 bytes",
		},
		{
			name: "endless manifest body",
			fault: onManifest(func(w http.ResponseWriter, r *http.Request, _ hostile.Request) bool {
				hostile.Endless(w, r, http.StatusOK, ocispec.MediaTypeImageManifest, []byte(`{"schemaVersion":2,`))
				return true
			}),
			remote: "larger than 4194304 bytes", pull: "larger than 4194304 bytes",
		},
		{
			name: "endless config body",
			fault: onBlob(config, func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool {
				hostile.Endless(w, r, http.StatusOK, b.MediaType, b.Data)
				return true
			}),
			remote: "is larger than", pull: "is larger than",
		},
		{
			name: "endless layer body",
			fault: onBlob(layer, func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool {
				hostile.Endless(w, r, http.StatusOK, b.MediaType, b.Data)
				return true
			}),
			remote: ok, pull: "is larger than",
		},
		{
			name: "error body over 64 KiB",
			fault: onManifest(func(w http.ResponseWriter, r *http.Request, _ hostile.Request) bool {
				big(w, r, http.StatusBadRequest, hugeErr)
				return true
			}),
			remote: "bad request", pull: "bad request",
		},
		{
			name: "endless error body",
			fault: onManifest(func(w http.ResponseWriter, r *http.Request, _ hostile.Request) bool {
				hostile.Endless(w, r, http.StatusBadRequest, "application/json", []byte(`{"errors":[`))
				return true
			}),
			remote: "bad request", pull: "bad request",
		},
		{
			name: "endless 500 error body on a layer",
			fault: onBlob(layer, func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool {
				hostile.Endless(w, r, http.StatusInternalServerError, "application/json", []byte(`{"errors":[`))
				return true
			}),
			remote: ok, pull: "unavailable",
		},
		{
			name: "token body over 64 KiB", token: true,
			fault: func(*testregistry.Image) hostile.Fault {
				return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
					if req.Kind != hostile.KindToken {
						return false
					}
					big(w, r, http.StatusOK, hugeToken)
					return true
				}
			},
			remote: "token response", pull: "token response",
		},
		{
			name: "endless token body", token: true,
			fault: func(*testregistry.Image) hostile.Fault {
				return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
					if req.Kind != hostile.KindToken {
						return false
					}
					hostile.Endless(w, r, http.StatusOK, "application/json", []byte(`{"token":"`))
					return true
				}
			},
			remote: "token response", pull: "token response",
		},
	})
	hwm := procStatus(c, s.d.pid(), "VmHWM")
	c.Assert(hwm < maxHWMKiB, check.Equals, true, check.Commentf("wharfd VmHWM %d KiB after endless bodies (bound %d KiB)", hwm, maxHWMKiB))
}

package integration

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// redirectAll sends every manifest-by-digest and blob request to target.
func redirectAll(target func() string) hostile.Fault {
	return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
		if req.Kind == hostile.KindBlob || (req.Kind == hostile.KindManifest && strings.HasPrefix(req.Ref, "sha256:")) {
			hostile.Redirect(w, target()+r.URL.Path)
			return true
		}
		return false
	}
}

// A registry (basic or token auth) that redirects blobs and manifests to
// another host, directly or through a second redirecting host: the pull
// succeeds and no Authorization header ever reaches the other hosts.
func (s *HostileRegistrySuite) TestRedirectsCarryNoCredentials(c *check.C) {
	for _, mode := range []string{"basic", "token"} {
		for _, chain := range []bool{false, true} {
			img, err := testregistry.NewImage(testregistry.ImageOptions{LayerSize: 4096})
			c.Assert(err, check.IsNil)
			final, err := hostile.Start(hostile.Options{Image: img})
			c.Assert(err, check.IsNil)
			target := final.URL
			var hop *hostile.Registry
			if chain {
				hop, err = hostile.Start(hostile.Options{Image: img, Fault: redirectAll(func() string { return final.URL })})
				c.Assert(err, check.IsNil)
				target = hop.URL
			}
			opts := hostile.Options{Image: img, Fault: redirectAll(func() string { return target })}
			if mode == "basic" {
				opts.Username, opts.Password = "hostile-user", "hostile-Pa55"
			} else {
				opts.Token = true
			}
			reg, err := hostile.Start(opts)
			c.Assert(err, check.IsNil)
			authHdr := RegistryAuth("hostile-user", "hostile-Pa55", reg.Host)
			what := check.Commentf("%s auth, chain %v", mode, chain)

			r := s.d.remoteInspect(c, reg.Ref(), authHdr)
			c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s auth, chain %v: %s", mode, chain, r))
			msg := s.d.pullMessage(c, reg.Name(), reg.Tag, authHdr)
			c.Check(msg, check.Equals, "", what)

			authed := 0
			for _, seen := range reg.Seen() {
				if seen.Authorization != "" {
					authed++
				}
			}
			c.Check(authed > 0, check.Equals, true, check.Commentf("the registry itself never got credentials (%s)", what))
			others := []*hostile.Registry{final}
			if hop != nil {
				others = append(others, hop)
			}
			for _, o := range others {
				c.Check(o.Count(hostile.KindBlob) > 0, check.Equals, true, check.Commentf("redirect target unused (%s)", what))
				for _, seen := range o.Seen() {
					c.Check(seen.Authorization, check.Equals, "", check.Commentf("%s %s on %s got credentials (%s)", seen.Method, seen.Path, o.Host, what))
				}
			}
			c.Check(s.d.oneShot(c, http.MethodDelete, "/v1.50/images/"+reg.Ref()).Status, check.Equals, http.StatusOK)
			reg.Close()
			final.Close()
			if hop != nil {
				hop.Close()
			}
		}
	}
	s.d.ping(c)
}

// Foreign (non-distributable) layers list URLs; wharf never fetches them:
// the layer comes from the registry like any other, with the registry's
// credentials, and the URL's host sees no request at all.
func (s *HostileRegistrySuite) TestForeignLayerURLsAreNotFetched(c *check.C) {
	img, err := testregistry.NewImage(testregistry.ImageOptions{LayerSize: 4096})
	c.Assert(err, check.IsNil)
	foreign, err := hostile.Start(hostile.Options{Image: img})
	c.Assert(err, check.IsNil)
	defer foreign.Close()
	reg, err := hostile.Start(hostile.Options{Image: img, Username: "u", Password: "p"})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	l := img.Layers[0].Descriptor()
	l.MediaType = "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
	l.URLs = []string{foreign.URL + "/v2/hostile/app/blobs/" + l.Digest.String(), foreign.URL + "/layer.tar.gz"}
	reg.ServeManifest(ocispec.MediaTypeImageManifest, manifestJSON(img.Config.Descriptor(), l))
	authHdr := RegistryAuth("u", "p", reg.Host)
	r := s.d.remoteInspect(c, reg.Ref(), authHdr)
	c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s", r))
	msg := s.d.pullMessage(c, reg.Name(), reg.Tag, authHdr)
	c.Check(msg, check.Equals, "")
	c.Check(foreign.Seen(), check.HasLen, 0)
	c.Check(reg.Count(hostile.KindBlob) >= 2, check.Equals, true)
	c.Check(s.d.oneShot(c, http.MethodDelete, "/v1.50/images/"+reg.Ref()).Status, check.Equals, http.StatusOK)
}

// Malformed, truncated and wrongly typed JSON in every document a registry
// serves.
func (s *HostileRegistrySuite) TestMalformedJSON(c *check.C) {
	// withConfig serves cfg as the image's config blob.
	withConfig := func(cfg string) func(r *hostile.Registry) {
		return func(r *hostile.Registry) {
			b := testregistry.NewBlob(ocispec.MediaTypeImageConfig, []byte(cfg))
			r.ServeBlob(b)
			r.ServeManifest(ocispec.MediaTypeImageManifest, manifestJSON(b.Descriptor(), r.Image.Layers[0].Descriptor()))
		}
	}
	onKind := func(kind hostile.Kind, status int, body string) func(*testregistry.Image) hostile.Fault {
		return func(*testregistry.Image) hostile.Fault {
			return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
				if req.Kind != kind {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = w.Write([]byte(body))
				return true
			}
		}
	}
	s.run(c, []hcase{
		{
			name:   "truncated manifest",
			prep:   serveDoc(ocispec.MediaTypeImageManifest, func(img *testregistry.Image) []byte { return img.Manifest.Data[:len(img.Manifest.Data)/2] }),
			remote: "not valid JSON", pull: "not valid JSON",
		},
		{
			name: "manifest with wrongly typed fields",
			prep: serveDoc(ocispec.MediaTypeImageManifest, func(*testregistry.Image) []byte {
				return []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":"x","layers":5}`)
			}),
			remote: "manifest", pull: "manifest",
		},
		{
			name: "index with wrongly typed entries",
			prep: serveDoc(ocispec.MediaTypeImageIndex, func(*testregistry.Image) []byte {
				return []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":{"a":1}}`)
			}),
			remote: "index", pull: "index",
		},
		{
			name:   "manifest that is a JSON string",
			prep:   serveDoc(ocispec.MediaTypeImageManifest, func(*testregistry.Image) []byte { return []byte(`"manifest"`) }),
			remote: "not valid JSON", pull: "not valid JSON",
		},
		{name: "truncated config", prep: withConfig(`{"architecture":"amd64","os":`), remote: "config", pull: "config"},
		{name: "config with wrongly typed fields", prep: withConfig(`{"architecture":5,"os":"linux","rootfs":"layers","config":[]}`), remote: "config", pull: "config"},
		{name: "truncated token response", token: true, fault: onKind(hostile.KindToken, 200, `{"token":"abc`), remote: "token", pull: "token"},
		{name: "wrongly typed token response", token: true, fault: onKind(hostile.KindToken, 200, `{"token":5,"expires_in":"soon"}`), remote: "token", pull: "token"},
		{name: "truncated error body", fault: onKind(hostile.KindManifest, http.StatusBadRequest, `{"errors":[{"code":"MANIFEST_INV`), remote: "bad request", pull: "bad request"},
		{name: "wrongly typed error body", fault: onKind(hostile.KindManifest, http.StatusBadRequest, `{"errors":"no"}`), remote: "bad request", pull: "bad request"},
		{
			name: "truncated tag list", fault: onKind(hostile.KindTags, 200, `{"name":"hostile/app","tags":["1.`),
			check: func(c *check.C, r *hostile.Registry) {
				msg := s.d.pullMessage(c, r.Name(), "", "")
				c.Check(strings.Contains(msg, r.Host), check.Equals, true, check.Commentf("pull -a: %s", msg))
				c.Logf("truncated tag list: pull -a: %s", msg)
			},
		},
		{
			name: "wrongly typed tag list", fault: onKind(hostile.KindTags, 200, `{"name":"hostile/app","tags":{"1.0":true}}`),
			check: func(c *check.C, r *hostile.Registry) {
				msg := s.d.pullMessage(c, r.Name(), "", "")
				c.Check(strings.Contains(msg, r.Host), check.Equals, true, check.Commentf("pull -a: %s", msg))
				c.Logf("wrongly typed tag list: pull -a: %s", msg)
			},
		},
	})
}

// Redirects that go nowhere useful: a loop on the registry itself, a
// downgrade from HTTPS to plain HTTP, and a hop to a server that never
// answers. Each ends in an error naming the registry, within the redirect
// and timeout bounds.
func (s *HostileRegistrySuite) TestRedirectLoopAndDeadEnd(c *check.C) {
	silent, err := hostile.Silent()
	c.Assert(err, check.IsNil)
	defer silent.Close()
	var plainHits atomic.Int64
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		http.NotFound(w, r)
	}))
	defer plain.Close()
	s.run(c, []hcase{
		{
			name: "layer redirect loop",
			fault: func(*testregistry.Image) hostile.Fault {
				return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
					if req.Kind != hostile.KindBlob || r.URL.Query().Get("loop") == "stop" {
						return false
					}
					hostile.Redirect(w, r.URL.Path+"?hop="+r.URL.Query().Get("hop")+"x")
					return true
				}
			},
			remote: "redirects", pull: "redirects",
			check: atMost(hostile.KindBlob, 3*11*2),
		},
		{
			// Possible through wharfd since loopback registries may serve
			// TLS (issue 10, finding 7).
			name: "layer redirected from https to http",
			tls:  true,
			fault: onBlob(layer, func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool {
				hostile.Redirect(w, plain.URL+r.URL.Path)
				return true
			}),
			remote: ok, pull: "downgrade",
			check: func(c *check.C, _ *hostile.Registry) {
				c.Check(plainHits.Load(), check.Equals, int64(0), check.Commentf("the plain HTTP server was reached"))
			},
		},
		{
			name: "layer redirected to a silent server",
			fault: onBlob(layer, func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool {
				hostile.Redirect(w, "http://"+silent.Host+r.URL.Path)
				return true
			}),
			remote: ok, pull: "unavailable",
		},
	})
}

package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// serveDoc makes the registry answer the tag with body as mediaType.
func serveDoc(mediaType string, body func(img *testregistry.Image) []byte) func(r *hostile.Registry) {
	return func(r *hostile.Registry) { r.ServeManifest(mediaType, body(r.Image)) }
}

// withDigests is the image's manifest with the config and first layer
// digests replaced.
func withDigests(cfg, lay string) func(img *testregistry.Image) []byte {
	return func(img *testregistry.Image) []byte {
		c, l := img.Config.Descriptor(), img.Layers[0].Descriptor()
		if cfg != "" {
			c.Digest = digest.Digest(cfg)
		}
		if lay != "" {
			l.Digest = digest.Digest(lay)
		}
		return manifestJSON(c, l)
	}
}

func indexOf(descs ...ocispec.Descriptor) []byte {
	b, _ := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: descs})
	return b
}

func (s *HostileRegistrySuite) TestLyingContent(c *check.C) {
	zero := "sha256:" + strings.Repeat("0", 64)
	s.run(c, []hcase{
		{
			name: "manifest bytes do not match the requested digest",
			fault: func(img *testregistry.Image) hostile.Fault {
				other := hostile.Padded(img.Manifest.Data, len(img.Manifest.Data)+1)
				return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
					if req.Kind != hostile.KindManifest || !strings.HasPrefix(req.Ref, "sha256:") {
						return false
					}
					hostile.WriteContent(w, r, img.Manifest.MediaType, other, req.Ref)
					return true
				}
			},
			remote: "digest mismatch", pull: "digest mismatch", byDigest: true,
		},
		{
			name: "Docker-Content-Digest disagrees with the body",
			fault: func(img *testregistry.Image) hostile.Fault {
				return func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
					if req.Kind != hostile.KindManifest {
						return false
					}
					hostile.WriteContent(w, r, img.Manifest.MediaType, img.Manifest.Data, zero)
					return true
				}
			},
			remote: "digest mismatch", pull: "digest mismatch",
		},
		{
			name: "config bytes do not match the descriptor",
			fault: onBlob(config, func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool {
				hostile.WriteContent(w, r, b.MediaType, flipped(b.Data), b.Digest)
				return true
			}),
			remote: "digest mismatch", pull: "digest mismatch",
		},
		{
			name: "layer bytes do not match the descriptor",
			fault: onBlob(layer, func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool {
				hostile.WriteContent(w, r, b.MediaType, flipped(b.Data), b.Digest)
				return true
			}),
			remote: ok, pull: "digest mismatch",
		},
		{
			name: "layer shorter than its descriptor",
			fault: onBlob(layer, func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool {
				hostile.WriteContent(w, r, b.MediaType, b.Data[:len(b.Data)/2], b.Digest)
				return true
			}),
			remote: ok, pull: "Content-Length",
		},
		{
			name: "document both manifest and index",
			prep: serveDoc(ocispec.MediaTypeImageManifest, func(img *testregistry.Image) []byte {
				var m map[string]any
				_ = json.Unmarshal(img.Manifest.Data, &m)
				m["manifests"] = []any{img.Config.Descriptor()}
				b, _ := json.Marshal(m)
				return b
			}),
			remote: "both a manifest and an index", pull: "both a manifest and an index",
		},
		{
			name: "media type says manifest, body is an index",
			prep: serveDoc(ocispec.MediaTypeImageManifest, func(img *testregistry.Image) []byte {
				return indexOf(img.Manifest.Descriptor())
			}),
			remote: "contradicts", pull: "contradicts",
		},
		{
			name: "media type says index, body is a manifest",
			prep: serveDoc(ocispec.MediaTypeImageIndex, func(img *testregistry.Image) []byte {
				return img.Manifest.Data
			}),
			remote: "contradicts", pull: "contradicts",
		},
		{
			name: "index entry that is another index",
			prep: func(r *hostile.Registry) {
				inner := testregistry.NewBlob(ocispec.MediaTypeImageIndex, indexOf(r.Image.Manifest.Descriptor()))
				r.ServeBlob(inner)
				d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.Digest(inner.Digest), Size: int64(len(inner.Data)),
					Platform: &ocispec.Platform{OS: "linux", Architecture: "amd64"}}
				r.ServeManifest(ocispec.MediaTypeImageIndex, indexOf(d))
			},
			remote: "index", pull: "index",
		},
		{
			name: "index entry typed as a manifest that is an index",
			prep: func(r *hostile.Registry) {
				inner := testregistry.NewBlob(ocispec.MediaTypeImageIndex, indexOf(r.Image.Manifest.Descriptor()))
				r.ServeBlob(inner)
				d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(inner.Digest), Size: int64(len(inner.Data)),
					Platform: &ocispec.Platform{OS: "linux", Architecture: "amd64"}}
				r.ServeManifest(ocispec.MediaTypeImageIndex, indexOf(d))
			},
			remote: "contradicts", pull: "contradicts",
		},
		{
			name:   "layer digest with a path",
			prep:   serveDoc(ocispec.MediaTypeImageManifest, withDigests("", "sha256:../../x")),
			remote: "invalid digest", pull: "invalid digest", forbidden: []string{"..", "/x"},
		},
		{
			name:   "config digest of the wrong length",
			prep:   serveDoc(ocispec.MediaTypeImageManifest, withDigests("sha256:abc", "")),
			remote: "invalid digest", pull: "invalid digest", forbidden: []string{"sha256:abc/", "sha256:abc"},
		},
		{
			name:   "layer digest with an unknown algorithm",
			prep:   serveDoc(ocispec.MediaTypeImageManifest, withDigests("", "md5:d41d8cd98f00b204e9800998ecf8427e")),
			remote: "invalid digest", pull: "invalid digest", forbidden: []string{"md5"},
		},
		{
			name: "index entry digest with a path",
			prep: serveDoc(ocispec.MediaTypeImageIndex, func(img *testregistry.Image) []byte {
				d := img.Manifest.Descriptor()
				d.Digest = "sha256:../../../etc/passwd"
				d.Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64"}
				return indexOf(d)
			}),
			remote: "invalid digest", pull: "invalid digest", forbidden: []string{"..", "passwd"},
		},
		{
			name: "Docker-Content-Digest with a path",
			fault: onManifest(func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
				hostile.WriteContent(w, r, ocispec.MediaTypeImageManifest, []byte(`{}`), "sha256:../../x")
				return true
			}),
			remote: "invalid Docker-Content-Digest", pull: "invalid Docker-Content-Digest", forbidden: []string{".."},
		},
		{
			name: "Docker-Content-Digest with an unknown algorithm",
			fault: onManifest(func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
				hostile.WriteContent(w, r, ocispec.MediaTypeImageManifest, []byte(`{}`), "md5:d41d8cd98f00b204e9800998ecf8427e")
				return true
			}),
			remote: "Docker-Content-Digest", pull: "Docker-Content-Digest", forbidden: []string{"md5"},
		},
	})
}

// A schema2 manifest may not declare a layer of size 0 and then stream an
// endless body: the download stops at the declared size instead of filling
// the disk.
func (s *HostileRegistrySuite) TestZeroSizeLayerWithEndlessBody(c *check.C) {
	var served atomic.Int64
	s.runOne(c, hcase{
		name: "docker layer declared 0 bytes, served endlessly",
		prep: func(r *hostile.Registry) {
			l := r.Image.Layers[0].Descriptor()
			l.MediaType = testregistry.MediaTypeDockerLayer
			l.Size = 0
			r.ServeManifest(testregistry.MediaTypeDockerManifest, dockerManifestJSON(r.Image.Config.Descriptor(), l))
		},
		fault: onBlob(layer, func(w http.ResponseWriter, r *http.Request, b testregistry.Blob) bool {
			w.WriteHeader(http.StatusOK)
			chunk := make([]byte, 64<<10)
			for i := 0; i < 1024 && r.Context().Err() == nil; i++ { // at most 64 MiB
				n, err := w.Write(chunk)
				served.Add(int64(n))
				if err != nil {
					return true
				}
			}
			return true
		}),
		remote: ok, pull: "larger than 0 bytes",
	})
	c.Check(served.Load() < 16<<20, check.Equals, true, check.Commentf("wharfd read %d bytes of a 0-byte layer", served.Load()))
}

func dockerManifestJSON(cfg ocispec.Descriptor, layers ...ocispec.Descriptor) []byte {
	cfg.MediaType = testregistry.MediaTypeDockerConfig
	b, _ := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: testregistry.MediaTypeDockerManifest, Config: cfg, Layers: layers,
	})
	return b
}

// An index of 10,000 entries (under the 4 MiB cap) costs a remote inspect
// with manifests=1 and a pull a bounded number of requests: entries are
// listed from the index, not fetched one by one.
func (s *HostileRegistrySuite) TestHugeIndexIsNotAnAmplifier(c *check.C) {
	s.runOne(c, hcase{
		name: "index of 10,000 entries",
		prep: func(r *hostile.Registry) {
			var descs []ocispec.Descriptor
			for i := 0; i < 10000; i++ {
				d := r.Image.Manifest.Descriptor()
				d.Platform = &ocispec.Platform{OS: "linux", Architecture: fmt.Sprintf("arch%d", i)}
				descs = append(descs, d)
			}
			descs[9999].Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64"}
			r.ServeManifest(ocispec.MediaTypeImageIndex, indexOf(descs...))
		},
		remote: ok, pull: ok,
		check: func(c *check.C, r *hostile.Registry) {
			resp := s.d.oneShot(c, http.MethodGet, "/v1.50/images/"+r.Ref()+"/json?remote=1&manifests=1")
			c.Check(resp.Status, check.Equals, http.StatusOK, check.Commentf("%s", resp))
			c.Check(len(resp.Body) < 64<<20, check.Equals, true)
			c.Check(len(r.Seen()) < 30, check.Equals, true, check.Commentf("%d requests for one index", len(r.Seen())))
			c.Logf("10,000-entry index: %d registry requests, manifests=1 answer %d bytes", len(r.Seen()), len(resp.Body))
		},
	})
}

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"github.com/moby/moby/api/types/image"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// AttestationsMemorySuite: an attestations answer within the 64 MiB the
// daemon reads for one answer, served by the real registry, measured as
// wharfd's peak resident memory (VmHWM) in a wharfd of its own per
// measurement. The statements are streamed one at a time into the answer:
// before, the bodies were all held, then marshalled whole, then copied
// (about 295 MB at the peak for one answer, 780 MB for three at once).
type AttestationsMemorySuite struct {
	suiteFixture
	reg *testregistry.Registry
}

func TestAttestationsMemorySuite(t *testing.T) { t.Parallel(); runSuite(t, &AttestationsMemorySuite{}) }

func (s *AttestationsMemorySuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
}

// Four statements of 15 MiB: 60 MiB of bodies, under the 64 MiB an answer
// may hold and the 32 MiB a statement may be.
const (
	attMemStatements    = 4
	attMemStatementSize = 15 << 20
	// Bounds on wharfd's VmHWM, measured on the 2-core test machine:
	// before the streaming, one answer peaked at ~300 MB and three at once
	// at ~780 MB; streamed, one at ~70 MB and three at ~115 MB. The bounds
	// leave room for the runtime's slack and stay far under the old peaks.
	maxAttestationsOneHWMKiB   = 128 << 10
	maxAttestationsThreeHWMKiB = 192 << 10
)

// bigStatement is an in-toto statement of about size bytes: indented JSON
// (the answer carries it compacted) with <, > and & in its strings (the
// answer escapes them, as json.Marshal does a RawMessage).
func bigStatement(rng *rand.Rand, pt string, size int) []byte {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	pad := make([]byte, size)
	for i := range pad {
		pad[i] = letters[rng.IntN(len(letters))]
	}
	return []byte(fmt.Sprintf("{\n  \"_type\": \"https://in-toto.io/Statement/v0.1\",\n  \"predicateType\": %q,\n"+
		"  \"predicate\": {\n    \"note\": \"<a> & <b>\",\n    \"pad\": \"%s\"\n  }\n}\n", pt, pad))
}

// pushBigAttestations pushes to repo:tag an index with one linux/amd64
// image and its attestation manifest of n statements, and returns the
// answer wharfd gives today for statement=1, byte for byte: the array of
// statements as json.Marshal writes it, and a newline.
func (s *AttestationsMemorySuite) pushBigAttestations(c *check.C, repo, tag string, n, size int) []byte {
	amd, err := testregistry.NewImage(testregistry.ImageOptions{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}})
	c.Assert(err, check.IsNil)
	rng := rand.New(rand.NewPCG(1, 2))
	var (
		layers []ocispec.Descriptor
		blobs  []testregistry.Blob
		want   []image.AttestationStatement
	)
	for i := range n {
		pt := fmt.Sprintf("https://example.com/predicate/%d", i)
		b := testregistry.NewBlob(testregistry.MediaTypeInToto, bigStatement(rng, pt, size))
		d := b.Descriptor()
		d.Annotations = map[string]string{"in-toto.io/predicate-type": pt}
		layers = append(layers, d)
		blobs = append(blobs, b)
		raw := json.RawMessage(b.Data)
		want = append(want, image.AttestationStatement{Descriptor: d, PredicateType: pt, Statement: &raw})
	}
	cfg := testregistry.NewBlob(testregistry.MediaTypeOCIConfig, []byte(`{"architecture":"unknown","os":"unknown","config":{},"rootfs":{"type":"layers","diff_ids":[]}}`))
	mb, err := json.Marshal(ocispec.Manifest{Versioned: specsV2, MediaType: ocispec.MediaTypeImageManifest, Config: cfg.Descriptor(), Layers: layers})
	c.Assert(err, check.IsNil)
	att := &testregistry.Image{Manifest: testregistry.NewBlob(ocispec.MediaTypeImageManifest, mb), Config: cfg, Layers: blobs,
		Platform: ocispec.Platform{OS: "unknown", Architecture: "unknown"}}
	entry := func(img *testregistry.Image) ocispec.Descriptor {
		d := img.Manifest.Descriptor()
		p := img.Platform
		d.Platform = &p
		return d
	}
	ad := entry(att)
	ad.Annotations = map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": amd.Manifest.Digest}
	ib, err := json.Marshal(ocispec.Index{Versioned: specsV2, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{entry(amd), ad}})
	c.Assert(err, check.IsNil)
	ctx, cancel := fixtureCtx()
	defer cancel()
	cl := s.reg.Client()
	for _, img := range []*testregistry.Image{amd, att} {
		c.Assert(cl.PushImage(ctx, repo, "", img), check.IsNil)
	}
	c.Assert(cl.PutManifest(ctx, repo, tag, testregistry.NewBlob(ocispec.MediaTypeImageIndex, ib)), check.IsNil)
	answer, err := json.Marshal(want)
	c.Assert(err, check.IsNil)
	return append(answer, '\n')
}

// getAttestations GETs path from d and returns the status and the body.
func getAttestations(d *Daemon, path string) (int, []byte, error) {
	resp, err := d.HTTPClient().Get("http://wharf" + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// TestAttestationsNearTheCapAreStreamed: one answer of 60 MiB of
// statements (remote=1&statement=1), then three at once in another
// wharfd. Every answer is the bytes wharfd answered before the streaming,
// and the peak resident memory stays under the bounds.
func (s *AttestationsMemorySuite) TestAttestationsNearTheCapAreStreamed(c *check.C) {
	want := s.pushBigAttestations(c, "attmem/app", "1", attMemStatements, attMemStatementSize)
	path := "/v1.55/images/" + s.reg.Host + "/attmem/app:1/attestations?remote=1&statement=1"

	for _, tc := range []struct {
		concurrent int
		bound      int64
	}{{1, maxAttestationsOneHWMKiB}, {3, maxAttestationsThreeHWMKiB}} {
		d := NewDaemon(c)
		d.Start(c)
		before := procStatus(c, d.pid(), "VmHWM")
		var wg sync.WaitGroup
		type answer struct {
			status int
			body   []byte
			err    error
		}
		answers := make([]answer, tc.concurrent)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := &answers[i]
				a.status, a.body, a.err = getAttestations(d, path)
			}()
		}
		wg.Wait()
		hwm := procStatus(c, d.pid(), "VmHWM")
		d.Kill()
		c.Logf("%d answer(s) at once of %d statements of %d bytes (%d bytes of answer each): VmHWM %d KiB -> %d KiB (bound %d KiB)",
			tc.concurrent, attMemStatements, attMemStatementSize, len(want), before, hwm, tc.bound)
		for i, a := range answers {
			c.Assert(a.err, check.IsNil)
			c.Assert(a.status, check.Equals, http.StatusOK, check.Commentf("answer %d: %.300s", i, a.body))
			c.Assert(bytes.Equal(a.body, want), check.Equals, true,
				check.Commentf("answer %d: %d bytes, want %d; starts %.200q", i, len(a.body), len(want), a.body))
		}
		c.Check(hwm < tc.bound, check.Equals, true, check.Commentf("%d at once: wharfd VmHWM %d KiB (bound %d KiB)", tc.concurrent, hwm, tc.bound))
	}
}

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// BoundedMemorySuite: what a hostile source can make wharfd hold, measured
// as wharfd's peak resident memory (VmHWM of /proc/PID/status, which only
// grows) in a wharfd of its own per test, against the red team's numbers
// (issue 20). wharfd starts at about 16-30 MiB.
type BoundedMemorySuite struct{ suiteFixture }

func TestBoundedMemorySuite(t *testing.T) { t.Parallel(); runSuite(t, &BoundedMemorySuite{}) }

// tagFloodPage is one 4 MiB page of one-letter tags ("a", 4 bytes of JSON
// each: some 1,048,000 tags), the most tags a page within the 4 MiB page
// cap can hold.
func tagFloodPage(repo string) []byte {
	const pageBytes = 4<<20 - 64
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"name":%q,"tags":["a"`, repo)
	for b.Len() < pageBytes-8 {
		b.WriteString(`,"a"`)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// maxTagFloodHWMKiB bounds wharfd's peak memory through a flood of tags:
// the listing stops after the first page, past 1,000,000 tags (17 MiB of
// headers and bytes for the page's decoding), with the 4 MiB page; GC's
// headroom doubles the live heap. Measured 75 MiB from 16 MiB; before the
// bound 16 pages took wharfd to 1,075 MiB (issue 20, finding 2: 1.1 GB).
const maxTagFloodHWMKiB = 128 << 10

// A registry answering 16 pages of 4 MiB of one-letter tags — within the
// 64 MiB a listing may read — makes wharf tags fail with 502 naming the
// registry and the tag bound, and wharfd's peak memory stays bounded.
func (s *BoundedMemorySuite) TestTagFloodIsBoundedInMemory(c *check.C) {
	d := s.startDaemon(c)
	var pages atomic.Int64
	var page []byte
	r, err := hostile.Start(hostile.Options{Fault: func(w http.ResponseWriter, hr *http.Request, req hostile.Request) bool {
		if req.Kind != hostile.KindTags {
			return false
		}
		i := pages.Add(1)
		if i < 16 {
			w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?n=1000&last=p%d>; rel="next"`, req.Repo, i))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(page)
		return true
	}})
	c.Assert(err, check.IsNil)
	defer r.Close()
	page = tagFloodPage(r.Repo)
	before := procStatus(c, d.pid(), "VmHWM")

	resp := d.Req(c, http.MethodGet, "/v1.50/wharf/images/"+pathEscape(r.Name())+"/tags", nil)
	hwm := procStatus(c, d.pid(), "VmHWM")
	c.Logf("tag flood: %d pages served, status %d, %.200s; VmHWM %d KiB -> %d KiB", pages.Load(), resp.Status, resp.Body, before, hwm)
	c.Check(resp.Status, check.Equals, http.StatusBadGateway, check.Commentf("%.300s", resp.Body))
	c.Check(strings.Contains(string(resp.Body), r.Host) && strings.Contains(string(resp.Body), "more than 1000000 tags"), check.Equals, true, check.Commentf("%.300s", resp.Body))
	c.Check(hwm < maxTagFloodHWMKiB, check.Equals, true, check.Commentf("wharfd VmHWM %d KiB after a tag flood (bound %d KiB)", hwm, maxTagFloodHWMKiB))
	d.ping(c)
}

// maxLongTagsHWMKiB bounds wharfd's peak memory through the longest
// tags: the listing stops when its tags take 32 MiB (230,000 tags of 128
// characters, after 8 of the 16 pages); GC's headroom doubles it. Before
// that bound the 64 MiB read took wharfd to 331 MiB, and answered 200.
const maxLongTagsHWMKiB = 128 << 10

// 16 pages of 4 MiB of the longest tags (128 characters), 64 MiB within
// the read cap, fail with 502 once the tags take 32 MiB in memory, and
// wharfd's peak memory stays bounded: the byte cap alone let the listing
// hold 64 MiB of tags and answer them again as JSON.
func (s *BoundedMemorySuite) TestLongTagsAreBoundedInMemory(c *check.C) {
	d := s.startDaemon(c)
	var pages atomic.Int64
	page := longTagPage()
	r, err := hostile.Start(hostile.Options{Fault: func(w http.ResponseWriter, hr *http.Request, req hostile.Request) bool {
		if req.Kind != hostile.KindTags {
			return false
		}
		i := pages.Add(1)
		if i < 16 {
			w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?n=1000&last=p%d>; rel="next"`, req.Repo, i))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(page)
		return true
	}})
	c.Assert(err, check.IsNil)
	defer r.Close()
	before := procStatus(c, d.pid(), "VmHWM")
	resp := d.Req(c, http.MethodGet, "/v1.50/wharf/images/"+pathEscape(r.Name())+"/tags", nil)
	hwm := procStatus(c, d.pid(), "VmHWM")
	c.Logf("long tags: %d pages served, status %d, %d bytes answered; VmHWM %d KiB -> %d KiB", pages.Load(), resp.Status, len(resp.Body), before, hwm)
	c.Check(resp.Status, check.Equals, http.StatusBadGateway, check.Commentf("%.300s", resp.Body))
	c.Check(strings.Contains(string(resp.Body), r.Host) && strings.Contains(string(resp.Body), "more than 33554432 bytes in memory"), check.Equals, true, check.Commentf("%.300s", resp.Body))
	c.Check(hwm < maxLongTagsHWMKiB, check.Equals, true, check.Commentf("wharfd VmHWM %d KiB (bound %d KiB)", hwm, maxLongTagsHWMKiB))
	d.ping(c)
}

// longTagPage is a page of 128-character tags, just under 4 MiB.
func longTagPage() []byte {
	const pageBytes = 4<<20 - 64
	tag := strings.Repeat("t", 128)
	var b bytes.Buffer
	b.WriteString(`{"name":"hostile/app","tags":[`)
	for i := 0; b.Len() < pageBytes-140; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + tag + `"`)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// maxIndexFloodHWMKiB bounds wharfd's peak memory through a copy of an
// index of 32 distinct 4 MiB platform manifests: before the bound wharfd
// held them all, parsed, before the first blob (16 MB to 457 MB in the
// red team's run, issue 20, finding 1).
const maxIndexFloodHWMKiB = 128 << 10

// A source index of 32 distinct platform manifests of 4 MiB each (the cap
// of one) makes wharf copy fail with 502 naming the registry and the
// bound, before a platform manifest is fetched, and wharfd's peak memory
// stays bounded.
func (s *BoundedMemorySuite) TestCopyOfAHugeIndexIsBoundedInMemory(c *check.C) {
	d := s.startDaemon(c)
	dst := s.startRegistry(c, testregistry.Options{})
	r, err := hostile.Start(hostile.Options{})
	c.Assert(err, check.IsNil)
	defer r.Close()
	total := serveFatIndex(c, r, 32, 4<<20-2048)
	before := procStatus(c, d.pid(), "VmHWM")

	res := d.Wharf(c, "copy", r.Ref(), dst.Host+"/flood/app:1")
	hwm := procStatus(c, d.pid(), "VmHWM")
	fetched := r.Count(hostile.KindManifest) - 1
	c.Logf("index flood: %s; %d manifest GETs; VmHWM %d KiB -> %d KiB", res, fetched, before, hwm)
	c.Check(res.ExitCode, check.Not(check.Equals), 0)
	c.Check(res.Stderr, check.Matches, `(?s).*registry `+r.Host+`.*index .* lists 32 manifests of `+fmt.Sprint(total)+` bytes.*at most 1000 manifests and 16777216 bytes.*--platform.*`)
	c.Check(fetched, check.Equals, 0, check.Commentf("%d manifest requests after the index", fetched))
	c.Check(dstDigest(c, dst, "flood/app", "1"), check.Equals, "")
	c.Check(hwm < maxIndexFloodHWMKiB, check.Equals, true, check.Commentf("wharfd VmHWM %d KiB (bound %d KiB)", hwm, maxIndexFloodHWMKiB))
	d.ping(c)
}

// serveFatIndex makes r serve, under its tag, an index of n distinct
// platform manifests of about size bytes each (an annotation pads them);
// total is the sum of their sizes.
func serveFatIndex(c *check.C, r *hostile.Registry, n, size int) (total int64) {
	img := r.Image
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex}
	idx.SchemaVersion = 2
	pad := strings.Repeat("p", size)
	for i := range n {
		m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: img.Config.Descriptor(),
			Layers: []ocispec.Descriptor{img.Layers[0].Descriptor()}, Annotations: map[string]string{"pad": pad, "n": fmt.Sprint(i)}}
		m.SchemaVersion = 2
		b, err := json.Marshal(m)
		c.Assert(err, check.IsNil)
		blob := testregistry.NewBlob(ocispec.MediaTypeImageManifest, b)
		r.ServeBlob(blob)
		desc := blob.Descriptor()
		total += desc.Size
		desc.Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64", OSVersion: fmt.Sprint(i)}
		idx.Manifests = append(idx.Manifests, desc)
	}
	b, err := json.Marshal(idx)
	c.Assert(err, check.IsNil)
	r.ServeManifest(ocispec.MediaTypeImageIndex, b)
	return total
}

// maxIndexAtBudgetHWMKiB bounds wharfd's peak memory through the largest
// index a copy takes: 16 MiB of platform manifests, held as bytes and
// parsed, and sent to DST.
const maxIndexAtBudgetHWMKiB = 128 << 10

// An index at the budget — 4 platform manifests of ~4 MiB, 16 MiB in
// all — is copied, and wharfd's peak memory says what the budget costs.
func (s *BoundedMemorySuite) TestCopyOfAnIndexAtTheBudget(c *check.C) {
	d := s.startDaemon(c)
	dst := s.startRegistry(c, testregistry.Options{})
	r, err := hostile.Start(hostile.Options{})
	c.Assert(err, check.IsNil)
	defer r.Close()
	total := serveFatIndex(c, r, 4, 4<<20-4096)
	before := procStatus(c, d.pid(), "VmHWM")
	res := d.Wharf(c, "copy", r.Ref(), dst.Host+"/fat/app:1")
	hwm := procStatus(c, d.pid(), "VmHWM")
	c.Logf("index at the budget (%d bytes of manifests): exit %d; VmHWM %d KiB -> %d KiB", total, res.ExitCode, before, hwm)
	c.Assert(res.ExitCode, check.Equals, 0, check.Commentf("%s", res))
	c.Check(dstDigest(c, dst, "fat/app", "1"), check.Not(check.Equals), "")
	c.Check(hwm < maxIndexAtBudgetHWMKiB, check.Equals, true, check.Commentf("wharfd VmHWM %d KiB (bound %d KiB)", hwm, maxIndexAtBudgetHWMKiB))
}

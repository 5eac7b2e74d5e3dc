package integration

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// StoreRaceSuite's machinery: its images and layers, the API calls it
// races, the tally of rounds and the judgement of each, and the archive it
// corrupts.

// raceLayer is one gzip layer and its DiffID.
type raceLayer struct {
	blob   testregistry.Blob
	diffID string
}

func newRaceLayer(c *check.C, name string) raceLayer {
	raw, err := testregistry.RandomTar(name, raceLayerSize)
	c.Assert(err, check.IsNil)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err = zw.Write(raw)
	c.Assert(err, check.IsNil)
	c.Assert(zw.Close(), check.IsNil)
	return raceLayer{blob: testregistry.NewBlob(testregistry.MediaTypeOCILayer, gz.Bytes()), diffID: digest.FromBytes(raw).String()}
}

// newRaceImage builds an OCI image of layers for the daemon's platform,
// labelled raceRoleLabel=role (so a prune can pick it by label).
func newRaceImage(c *check.C, layers []raceLayer, role string) *testregistry.Image {
	created := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	plat := ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	img := &testregistry.Image{Platform: plat}
	cfg := ocispec.Image{
		Created:  &created,
		Platform: plat,
		Config: ocispec.ImageConfig{
			Cmd:    []string{"/bin/sh"},
			Labels: map[string]string{raceRoleLabel: role},
		},
		RootFS: ocispec.RootFS{Type: "layers"},
	}
	for _, l := range layers {
		img.Layers = append(img.Layers, l.blob)
		img.DiffIDs = append(img.DiffIDs, l.diffID)
		cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, digest.Digest(l.diffID))
		cfg.History = append(cfg.History, ocispec.History{Created: &created, CreatedBy: "race fixture " + role})
	}
	cb, err := json.Marshal(cfg)
	c.Assert(err, check.IsNil)
	img.Config = testregistry.NewBlob(testregistry.MediaTypeOCIConfig, cb)
	m := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: testregistry.MediaTypeOCIManifest,
		Config:    img.Config.Descriptor(),
	}
	for _, l := range img.Layers {
		m.Layers = append(m.Layers, l.Descriptor())
	}
	mb, err := json.Marshal(m)
	c.Assert(err, check.IsNil)
	img.Manifest = testregistry.NewBlob(testregistry.MediaTypeOCIManifest, mb)
	return img
}

// raceBlobsOf are the digests an image's record needs on disk.
func raceBlobsOf(img *testregistry.Image) []string {
	out := []string{img.Manifest.Digest, img.Config.Digest}
	for _, l := range img.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// --- goroutine-safe API calls (no check.C: they run in the racing goroutines)

// raceOp is the outcome of one API call.
type raceOp struct {
	status int
	body   []byte
	err    string // "" = success: transport error, HTTP error message or in-stream error
}

func (s *StoreRaceSuite) call(method, path string, body []byte, stream bool) raceOp {
	return s.callLines(method, path, body, stream, nil)
}

// callLines is call that also hands each line of the answer, as it
// arrives, to onLine (nil: none).
func (s *StoreRaceSuite) callLines(method, path string, body []byte, stream bool, onLine func([]byte)) raceOp {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://wharfd"+path, rd)
	if err != nil {
		return raceOp{err: err.Error()}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-tar")
	}
	resp, err := s.cl.Do(req)
	if err != nil {
		return raceOp{err: "transport: " + err.Error()}
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	rdr := bufio.NewReader(resp.Body)
	for {
		line, rerr := rdr.ReadBytes('\n')
		buf.Write(line)
		if onLine != nil && len(line) > 0 {
			onLine(line)
		}
		if rerr != nil {
			if rerr != io.EOF {
				err = rerr
			}
			break
		}
	}
	b := buf.Bytes()
	op := raceOp{status: resp.StatusCode, body: b}
	switch {
	case err != nil:
		op.err = "read: " + err.Error()
	case resp.StatusCode != http.StatusOK:
		op.err = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(b))
	case stream:
		op.err = raceStreamErr(b)
	}
	return op
}

// raceStreamErr is the first error message of a JSON-lines progress stream.
func raceStreamErr(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.ErrorDetail.Message != "" {
			return m.ErrorDetail.Message
		}
		if m.Error != "" {
			return m.Error
		}
	}
	return ""
}

func (s *StoreRaceSuite) pull(image, tag string) raceOp {
	return s.pullNotify(image, tag, nil)
}

// pullNotify pulls and closes reused (when not nil) at the first progress
// line that says a layer "Already exists": the pull has found a blob
// another image brought and relies on it from then on.
func (s *StoreRaceSuite) pullNotify(image, tag string, reused chan struct{}) raceOp {
	q := url.Values{"fromImage": {image}, "tag": {tag}}
	var onLine func([]byte)
	if reused != nil {
		once := sync.Once{}
		onLine = func(line []byte) {
			var m struct{ Status string }
			if json.Unmarshal(line, &m) == nil && m.Status == "Already exists" {
				once.Do(func() { close(reused) })
			}
		}
	}
	return s.callLines(http.MethodPost, "/v1.50/images/create?"+q.Encode(), nil, true, onLine)
}

func (s *StoreRaceSuite) load(archive []byte) raceOp {
	op := s.call(http.MethodPost, "/v1.50/images/load?quiet=1", archive, true)
	if op.err == "" && !bytes.Contains(op.body, []byte("Loaded image")) {
		op.err = "no \"Loaded image\" line: " + string(op.body)
	}
	return op
}

func (s *StoreRaceSuite) prune(filters map[string][]string) raceOp {
	q := url.Values{}
	if len(filters) > 0 {
		f, _ := json.Marshal(filters)
		q.Set("filters", string(f))
	}
	return s.call(http.MethodPost, "/v1.50/images/prune?"+q.Encode(), nil, false)
}

// removeB deletes image B in one of three ways; it checks that the answer
// names B's ID as deleted.
func (s *StoreRaceSuite) removeB(mode raceRemoveMode) raceOp {
	var op raceOp
	switch mode {
	case removeRmi:
		op = s.call(http.MethodDelete, "/v1.50/images/"+s.bRef, nil, false)
	case removePruneAll:
		op = s.prune(map[string][]string{"dangling": {"false"}, "label": {raceRoleLabel + "=b"}})
	case removePruneDangling:
		op = s.prune(nil)
	}
	if op.err == "" && !bytes.Contains(op.body, []byte(`"Deleted":"`+s.b.ID()+`"`)) {
		op.err = "B not reported deleted: " + string(op.body)
	}
	return op
}

// raceRemoveMode is how a round removes B.
type raceRemoveMode int

const (
	// removeRmi: DELETE /images/host/race/b:1 (B pulled by tag).
	removeRmi raceRemoveMode = iota
	// removePruneAll: POST /images/prune dangling=false, label=…=b (B tagged).
	removePruneAll
	// removePruneDangling: B pulled by digest only (untagged, dangling),
	// removed by a plain POST /images/prune.
	removePruneDangling
	raceRemoveModes
)

func (m raceRemoveMode) String() string {
	return [...]string{"rmi", "prune dangling=false", "untagged+prune"}[m]
}

// --- state helpers (main goroutine) -------------------------------------------

// reset removes every image (prune dangling=false).
func (s *StoreRaceSuite) reset(c *check.C) {
	op := s.prune(map[string][]string{"dangling": {"false"}})
	c.Assert(op.err, check.Equals, "", check.Commentf("reset prune"))
}

func (s *StoreRaceSuite) present(c *check.C, id string) bool {
	op := s.call(http.MethodGet, "/v1.50/images/"+id+"/json", nil, false)
	c.Assert(op.status == http.StatusOK || op.status == http.StatusNotFound, check.Equals, true, check.Commentf("inspect %s: %s", id, op.err))
	return op.status == http.StatusOK
}

// putB makes B present (by tag, or by digest only for removePruneDangling)
// and checks that A is absent.
func (s *StoreRaceSuite) putB(c *check.C, mode raceRemoveMode) {
	tag := "1"
	if mode == removePruneDangling {
		tag = s.b.Manifest.Digest
	}
	op := s.pull(s.bRepo, tag)
	c.Assert(op.err, check.Equals, "", check.Commentf("set-up pull of B"))
	c.Assert(s.present(c, s.b.ID()), check.Equals, true)
	c.Assert(s.present(c, s.a.ID()), check.Equals, false)
}

// missingBlobs are those of digests that are not files under blobs/.
func (s *StoreRaceSuite) missingBlobs(digests []string) []string {
	var out []string
	for _, d := range digests {
		if !fileExists(s.blobPath(d)) {
			out = append(out, shortDigest(d))
		}
	}
	return out
}

func (s *StoreRaceSuite) blobPath(d string) string {
	return filepath.Join(s.d.Root, "blobs", "sha256", strings.TrimPrefix(d, "sha256:"))
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return d
}

// storeCheck is GET /wharf/system/check?full=0 (goroutine-safe).
func (s *StoreRaceSuite) storeCheck() (types.CheckReport, error) {
	var rep types.CheckReport
	op := s.call(http.MethodGet, "/wharf/system/check?full=0", nil, false)
	if op.err != "" {
		return rep, fmt.Errorf("system check: %s", op.err)
	}
	if err := json.Unmarshal(op.body, &rep); err != nil {
		return rep, fmt.Errorf("system check: %v: %s", err, op.body)
	}
	return rep, nil
}

func problemsString(rep types.CheckReport) string {
	var p []string
	for _, pr := range rep.Problems {
		p = append(p, pr.Kind+" "+shortDigest(pr.Object))
	}
	return strings.Join(p, ", ")
}

// raceTally counts failed rounds per kind and keeps the first messages.
type raceTally struct {
	what   string
	rounds int
	lost   int
	kinds  map[string]int
	order  []string
	errors []string
}

func newRaceTally(what string) *raceTally {
	return &raceTally{what: what, kinds: map[string]int{}}
}

// round records the failures of one round (none: the round is clean).
func (t *raceTally) round(n int, label string, fails map[string]string) {
	t.rounds++
	if len(fails) == 0 {
		return
	}
	t.lost++
	var kinds []string
	for k := range fails {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if t.kinds[k] == 0 {
			t.order = append(t.order, k)
		}
		t.kinds[k]++
		if len(t.errors) < raceFirstErrors {
			t.errors = append(t.errors, fmt.Sprintf("round %d (%s): %s: %s", n, label, k, fails[k]))
		}
	}
}

func (t *raceTally) String() string {
	var kinds []string
	for _, k := range t.order {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, t.kinds[k]))
	}
	return fmt.Sprintf("%s: %d/%d rounds lost (%s); first errors:\n  %s",
		t.what, t.lost, t.rounds, strings.Join(kinds, ", "), strings.Join(t.errors, "\n  "))
}

// race releases add and remove together and returns their outcomes.
func race(add, remove func() raceOp) (raceOp, raceOp) {
	var (
		start  = make(chan struct{})
		wg     sync.WaitGroup
		a, rem raceOp
	)
	wg.Add(2)
	go func() { defer wg.Done(); <-start; a = add() }()
	go func() { defer wg.Done(); <-start; rem = remove() }()
	close(start)
	wg.Wait()
	return a, rem
}

// judgeAddVsRemove collects what went wrong in a round where A was added
// while B was removed.
func (s *StoreRaceSuite) judgeAddVsRemove(verb string, add, rem raceOp) map[string]string {
	fails := map[string]string{}
	if add.err != "" {
		fails[verb+" of A failed"] = add.err
	}
	if rem.err != "" {
		fails["removal of B failed"] = rem.err
	}
	s.checkStore(fails)
	return fails
}

// assertEmptyStore removes every image, prunes, and checks that no blob is
// left and that the check counts no orphan: the blobs of every failed or
// raced operation were reclaimed.
func (s *StoreRaceSuite) assertEmptyStore(c *check.C, what string) {
	s.reset(c)
	left := s.blobsOnDisk(c)
	rep, err := s.storeCheck()
	c.Assert(err, check.IsNil)
	c.Check(left, check.HasLen, 0, check.Commentf("%s: blobs left after removing every image and pruning: %v", what, left))
	c.Check(rep.Problems, check.HasLen, 0, check.Commentf("%s: system check after the final prune: %s", what, problemsString(rep)))
	c.Check(rep.UnreferencedBlobs, check.Equals, 0, check.Commentf("%s: UnreferencedBlobs after the final prune", what))
}

// blobsOnDisk are the (short) names of the files under blobs/sha256.
func (s *StoreRaceSuite) blobsOnDisk(c *check.C) []string {
	ents, err := os.ReadDir(filepath.Join(s.d.Root, "blobs", "sha256"))
	c.Assert(err, check.IsNil)
	var out []string
	for _, e := range ents {
		out = append(out, shortDigest(e.Name()))
	}
	return out
}

// saveA is the docker-save archive of A, made once through GET /images/get.
func (s *StoreRaceSuite) saveA(c *check.C) []byte {
	if s.archiveA != nil {
		return s.archiveA
	}
	s.reset(c)
	op := s.pull(s.reg.Host+"/race/a", "1")
	c.Assert(op.err, check.Equals, "", check.Commentf("set-up pull of A"))
	op = s.call(http.MethodGet, "/v1.50/images/get?"+url.Values{"names": {s.aRef}}.Encode(), nil, false)
	c.Assert(op.err, check.Equals, "", check.Commentf("save A"))
	s.archiveA = op.body
	s.reset(c)
	return s.archiveA
}

// corruptArchive is archive with the same layer blobs (same names, same
// order) but a config whose last DiffID is wrong, under a new manifest that
// index.json and manifest.json name. A's real config stays in as an extra
// file. Loading it stages every blob and then fails on the DiffID.
func corruptArchive(c *check.C, archive []byte) []byte {
	ents := tarEntries(c, archive)
	files := map[string]string{}
	for _, e := range ents {
		files[e.name] = e.body
	}
	var idx ocispec.Index
	c.Assert(json.Unmarshal([]byte(files["index.json"]), &idx), check.IsNil)
	c.Assert(idx.Manifests, check.HasLen, 1)
	blob := func(d digest.Digest) string { return "blobs/sha256/" + d.Encoded() }
	var man ocispec.Manifest
	c.Assert(json.Unmarshal([]byte(files[blob(idx.Manifests[0].Digest)]), &man), check.IsNil)
	var cfg map[string]any
	c.Assert(json.Unmarshal([]byte(files[blob(man.Config.Digest)]), &cfg), check.IsNil)
	rootfs := cfg["rootfs"].(map[string]any)
	ids := rootfs["diff_ids"].([]any)
	ids[len(ids)-1] = digest.FromString("not the last layer").String()
	cb, err := json.Marshal(cfg)
	c.Assert(err, check.IsNil)
	badCfg := digest.FromBytes(cb)
	oldCfg := man.Config.Digest
	man.Config.Digest, man.Config.Size = badCfg, int64(len(cb))
	mb, err := json.Marshal(man)
	c.Assert(err, check.IsNil)
	badMan := digest.FromBytes(mb)
	oldMan := idx.Manifests[0].Digest
	idx.Manifests[0].Digest, idx.Manifests[0].Size = badMan, int64(len(mb))
	ib, err := json.Marshal(idx)
	c.Assert(err, check.IsNil)
	dm := []dockerManifestEntryJSON{}
	c.Assert(json.Unmarshal([]byte(files["manifest.json"]), &dm), check.IsNil)
	for i := range dm {
		dm[i].Config = blob(badCfg)
	}
	db, err := json.Marshal(dm)
	c.Assert(err, check.IsNil)

	var out []tarEntry
	for _, e := range ents {
		switch e.name {
		case blob(oldCfg):
			out = append(out, tarEntry{name: blob(badCfg), body: string(cb)}, e)
		case blob(oldMan):
			out = append(out, tarEntry{name: blob(badMan), body: string(mb)})
		case "index.json":
			out = append(out, tarEntry{name: e.name, body: string(ib)})
		case "manifest.json":
			out = append(out, tarEntry{name: e.name, body: string(db)})
		default:
			out = append(out, e)
		}
	}
	return makeTar(c, out)
}

// isDiffIDError reports whether a load error is about a DiffID mismatch.
func isDiffIDError(msg string) bool {
	return containsAny(strings.ToLower(msg), "diff id", "diff_id", "diffid")
}

// dockerManifestEntryJSON is one entry of a docker-save manifest.json.
type dockerManifestEntryJSON struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// --- tests ---------------------------------------------------------------------

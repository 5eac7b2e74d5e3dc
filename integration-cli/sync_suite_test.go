package integration

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/internal/hostile"
	"github.com/wharfproject/wharf/internal/testregistry"
)

// SyncSuite: `wharf sync` and POST /wharf/images/sync mirror repositories
// between real registries — src with token auth, dst anonymous — each
// image that differs through the copy, the others by one HEAD each side
// (issue 25).
type SyncSuite struct {
	suiteFixture
	src, dst *testregistry.Registry
	d        *Daemon
	// digests of src's namespace: repo → tag → digest
	ns map[string]map[string]string
}

func TestSyncSuite(t *testing.T) { t.Parallel(); runSuite(t, &SyncSuite{}) }

// The namespace: 20 repositories × 5 tags.
const (
	syncNS    = "sync/ns"
	syncRepos = 20
)

var syncTags = []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0", "latest"}

func syncRepo(i int) string { return fmt.Sprintf("%s/r%02d", syncNS, i) }

func (s *SyncSuite) SetUpSuite(c *check.C) {
	s.src = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
	s.dst = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
	s.ns = map[string]map[string]string{}
	for i := range syncRepos {
		s.ns[syncRepo(i)] = map[string]string{}
		for _, t := range syncTags {
			img := pushImage(c, s.src, syncRepo(i), t, testregistry.ImageOptions{Layers: 1, LayerSize: 512})
			s.ns[syncRepo(i)][t] = img.Manifest.Digest
		}
	}
	s.d.WharfIn(c, []byte(s.src.Password+"\n"), "login", s.src.Host, "-u", s.src.Username, "--password-stdin")
}

// syncJSON runs `wharf sync --format json` and returns its events (the
// summary last) and the result.
func (s *SyncSuite) syncJSON(c *check.C, args ...string) ([]types.SyncEvent, Result) {
	r := s.d.Wharf(c, append([]string{"sync", "--format", "json"}, args...)...)
	var evs []types.SyncEvent
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if l == "" {
			continue
		}
		var ev types.SyncEvent
		c.Assert(json.Unmarshal([]byte(l), &ev), check.IsNil, check.Commentf("%s", r))
		evs = append(evs, ev)
	}
	c.Assert(len(evs) > 0, check.Equals, true, check.Commentf("%s", r))
	c.Assert(evs[len(evs)-1].Summary, check.NotNil, check.Commentf("%s", r))
	return evs, r
}

func countStatus(evs []types.SyncEvent, status string) int {
	n := 0
	for _, ev := range evs {
		if ev.Status == status {
			n++
		}
	}
	return n
}

// A namespace of 20 repositories × 5 tags, synced with a semver range and
// then a regex: exactly the tags selected land at dst with the source's
// digests. A re-run with nothing to do costs one HEAD per tag on each
// side, the listings at src, and nothing else: no manifest or blob GET,
// no upload.
func (s *SyncSuite) TestSyncNamespaceSemverRegexAndNothingToDo(c *check.C) {
	evs, r := s.syncJSON(c, "--semver", ">= 1.1, < 2", s.src.Host+"/"+syncNS, s.dst.Host+"/m1")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	sum := evs[len(evs)-1].Summary
	c.Assert(sum.Images, check.Equals, 2*syncRepos, check.Commentf("%s", r))
	c.Assert(sum.Synced, check.Equals, 2*syncRepos, check.Commentf("%s", r))
	for i := range syncRepos {
		base := fmt.Sprintf("r%02d", i)
		for _, t := range syncTags {
			want := ""
			if t == "1.1.0" || t == "1.2.0" {
				want = s.ns[syncRepo(i)][t]
			}
			c.Assert(dstDigest(c, s.dst, "m1/"+base, t), check.Equals, want, check.Commentf("m1/%s:%s", base, t))
		}
	}

	// Nothing to do: 2 HEADs per tag, no body.
	s.src.ResetCounters()
	s.dst.ResetCounters()
	evs, r = s.syncJSON(c, "--semver", ">= 1.1, < 2", s.src.Host+"/"+syncNS, s.dst.Host+"/m1")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	sum = evs[len(evs)-1].Summary
	c.Assert(sum.Skipped, check.Equals, 2*syncRepos, check.Commentf("%s", r))
	c.Assert(sum.Synced, check.Equals, 0)
	c.Assert(s.dst.Counter.Count("HEAD manifests"), check.Equals, 2*syncRepos, check.Commentf("%s", s.dst.Counter.Summary()))
	c.Assert(s.src.Counter.Count("HEAD manifests"), check.Equals, 2*syncRepos, check.Commentf("%s", s.src.Counter.Summary()))
	for _, reg := range []*testregistry.Registry{s.src, s.dst} {
		for _, class := range []string{"GET manifests", "GET blobs", "HEAD blobs", "POST uploads", "PATCH uploads", "PUT uploads", "PUT manifests"} {
			c.Assert(reg.Counter.Count(class), check.Equals, 0, check.Commentf("%s: %s", class, reg.Counter.Summary()))
		}
	}
	// The listings: the namespace's own tag list (404: no repository by
	// that name), the catalog, one tag list per repository. At dst: the
	// HEADs and nothing else.
	c.Assert(s.src.Counter.Count("GET tags"), check.Equals, 1+syncRepos, check.Commentf("%s", s.src.Counter.Summary()))
	c.Assert(s.src.Counter.Count("GET other"), check.Equals, 1, check.Commentf("%s", s.src.Counter.Summary()))
	c.Assert(s.dst.Counter.Total(), check.Equals, 2*syncRepos, check.Commentf("%s", s.dst.Counter.Summary()))

	// A regex over the same namespace: only latest.
	evs, r = s.syncJSON(c, "--tag-regex", "^lat", s.src.Host+"/"+syncNS, s.dst.Host+"/m1")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	c.Assert(evs[len(evs)-1].Summary.Synced, check.Equals, syncRepos, check.Commentf("%s", r))
	c.Assert(dstDigest(c, s.dst, "m1/r07", "latest"), check.Equals, s.ns[syncRepo(7)]["latest"])
	c.Assert(dstDigest(c, s.dst, "m1/r07", "2.0.0"), check.Equals, "")
}

// --dry-run prints the plan and moves nothing; --latest keeps the highest
// versions; --scoped keeps the source host and path.
func (s *SyncSuite) TestSyncDryRunLatestScoped(c *check.C) {
	src := s.src.Host + "/" + syncRepo(3)
	evs, r := s.syncJSON(c, "--dry-run", "--latest", "2", "--scoped", src, s.dst.Host+"/dry")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	c.Assert(countStatus(evs, types.SyncPlanned), check.Equals, 2, check.Commentf("%s", r))
	scopedHost := strings.ReplaceAll(s.src.Host, ":", "_")
	want := s.dst.Host + "/dry/" + scopedHost + "/" + syncRepo(3)
	got := map[string]bool{}
	for _, ev := range evs {
		if ev.Status == types.SyncPlanned {
			got[ev.Destination] = true
		}
	}
	c.Assert(got, check.DeepEquals, map[string]bool{want + ":1.2.0": true, want + ":2.0.0": true}, check.Commentf("%s", r))
	c.Assert(dstDigest(c, s.dst, "dry/"+scopedHost+"/"+syncRepo(3), "2.0.0"), check.Equals, "")

	// The text form says what would be copied.
	r = s.d.WharfOK(c, "sync", "--dry-run", "--latest", "1", src, s.dst.Host+"/dry")
	c.Assert(r.Stdout, check.Matches, `(?s).*planned +`+src+`:2\.0\.0 -> `+s.dst.Host+`/dry/r03:2\.0\.0.*Dry run: 1 images, 1 to copy.*`)
}

// A source that fails one image mid-run: with --keep-going the others are
// synced, the failure is exactly that image (step copy, class from its
// typed error), --failures has it, the exit status is 1; the re-run copies
// only what is missing.
func (s *SyncSuite) TestSyncKeepGoingAndRerun(c *check.C) {
	src := s.startRegistry(c, testregistry.Options{})
	imgs := map[string]*testregistry.Image{}
	for i := range 6 {
		repo := fmt.Sprintf("kg/a%d", i)
		imgs[repo] = pushImage(c, src, repo, "1", testregistry.ImageOptions{Layers: 2, LayerSize: 1024})
	}
	victim := imgs["kg/a3"].Layers[1].Digest
	var (
		mu      sync.Mutex
		failing = true
	)
	proxy, err := hostile.NewHookProxy(src.URL, func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		fail := failing && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+victim)
		mu.Unlock()
		if fail {
			hostile.WriteError(w, http.StatusNotFound, "BLOB_UNKNOWN", "injected: blob unknown to registry")
		}
		return fail
	}, nil)
	c.Assert(err, check.IsNil)
	defer proxy.Close()

	failures := filepath.Join(c.MkDir(), "failures.json")
	evs, r := s.syncJSON(c, "--keep-going", "--failures", failures, proxy.Host+"/kg", s.dst.Host+"/kg")
	c.Assert(r.ExitCode, check.Equals, 1, check.Commentf("%s", r))
	sum := evs[len(evs)-1].Summary
	c.Assert(sum.Synced, check.Equals, 5, check.Commentf("%s", r))
	c.Assert(sum.Failed, check.Equals, 1, check.Commentf("%s", r))
	f := sum.Failures[0]
	c.Assert(f.Image, check.Equals, proxy.Host+"/kg/a3:1")
	c.Assert(f.Step, check.Equals, "copy")
	c.Assert(f.Class, check.Equals, "not-found")
	b, err := os.ReadFile(failures)
	c.Assert(err, check.IsNil)
	var file struct{ Failures []types.SyncFailure }
	c.Assert(json.Unmarshal(b, &file), check.IsNil)
	c.Assert(file.Failures, check.DeepEquals, sum.Failures)
	c.Assert(dstDigest(c, s.dst, "kg/a3", "1"), check.Equals, "")
	c.Assert(dstDigest(c, s.dst, "kg/a4", "1"), check.Equals, imgs["kg/a4"].Manifest.Digest)

	// Without --keep-going the first failure ends the run.
	_, r = s.syncJSON(c, proxy.Host+"/kg/a3", s.dst.Host+"/kg")
	c.Assert(r.ExitCode, check.Equals, 1, check.Commentf("%s", r))

	// The re-run: only a3 moves, and of its blobs only the one missing.
	mu.Lock()
	failing = false
	mu.Unlock()
	s.dst.ResetCounters()
	evs, r = s.syncJSON(c, "--keep-going", "--failures", failures, proxy.Host+"/kg", s.dst.Host+"/kg")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	sum = evs[len(evs)-1].Summary
	c.Assert(sum.Synced, check.Equals, 1, check.Commentf("%s", r))
	c.Assert(sum.Skipped, check.Equals, 5, check.Commentf("%s", r))
	c.Assert(sum.BlobsUploaded <= 2, check.Equals, true, check.Commentf("%+v", sum))
	c.Assert(dstDigest(c, s.dst, "kg/a3", "1"), check.Equals, imgs["kg/a3"].Manifest.Digest)
	b, err = os.ReadFile(failures)
	c.Assert(err, check.IsNil)
	c.Assert(strings.Contains(string(b), `"failures": []`), check.Equals, true, check.Commentf("%s", b))
}

// --backup keeps what a destination tag named before the sync moves it.
func (s *SyncSuite) TestSyncBackupBeforeOverwrite(c *check.C) {
	old := pushImage(c, s.src, "sync/bk", "1", testregistry.ImageOptions{Layers: 1})
	s.d.WharfOK(c, "sync", s.src.Host+"/sync/bk", s.dst.Host+"/bk")
	c.Assert(dstDigest(c, s.dst, "bk/bk", "1"), check.Equals, old.Manifest.Digest)
	moved := pushImage(c, s.src, "sync/bk", "1", testregistry.ImageOptions{Layers: 1})

	evs, r := s.syncJSON(c, "--backup", "{{.Tag}}-backup-{{.Digest.Short}}", s.src.Host+"/sync/bk", s.dst.Host+"/bk")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	backup := "1-backup-" + strings.TrimPrefix(old.Manifest.Digest, "sha256:")[:12]
	c.Assert(countStatus(evs, types.SyncBackup), check.Equals, 1, check.Commentf("%s", r))
	c.Assert(evs[len(evs)-1].Summary.Backups, check.Equals, 1)
	c.Assert(dstDigest(c, s.dst, "bk/bk", backup), check.Equals, old.Manifest.Digest)
	c.Assert(dstDigest(c, s.dst, "bk/bk", "1"), check.Equals, moved.Manifest.Digest)

	// A template that cannot make a tag is refused before anything moves.
	r = s.d.Wharf(c, "sync", "--backup", "{{.Digest}}", s.src.Host+"/sync/bk", s.dst.Host+"/bk")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0)
	c.Assert(r.Stderr, check.Matches, `(?s).*not a tag.*`)
}

// A skopeo sync YAML taken as is: images, images-by-tag-regex,
// images-by-semver; its credentials and tls-verify are not taken (a
// warning says so) and the stored credentials are used.
func (s *SyncSuite) TestSyncSkopeoYAML(c *check.C) {
	yml := fmt.Sprintf(`%s:
  images:
    %s:
      - "1.0.0"
  images-by-tag-regex:
    %s: ^2\.
  images-by-semver:
    %s: ">= 1.1.0"
  credentials:
    username: nobody
    password: not-this-one
  tls-verify: false
`, s.src.Host, syncRepo(10), syncRepo(11), syncRepo(12))
	file := filepath.Join(c.MkDir(), "sync.yaml")
	c.Assert(os.WriteFile(file, []byte(yml), 0o600), check.IsNil)
	evs, r := s.syncJSON(c, file, s.dst.Host+"/y")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	c.Assert(r.Stderr, check.Matches, `(?s).*credentials in the YAML are ignored.*`)
	c.Assert(r.Stderr, check.Matches, `(?s).*tls-verify: false is not taken.*`)
	c.Assert(evs[len(evs)-1].Summary.Synced, check.Equals, 1+1+3, check.Commentf("%s", r))
	c.Assert(dstDigest(c, s.dst, "y/r10", "1.0.0"), check.Equals, s.ns[syncRepo(10)]["1.0.0"])
	c.Assert(dstDigest(c, s.dst, "y/r11", "2.0.0"), check.Equals, s.ns[syncRepo(11)]["2.0.0"])
	c.Assert(dstDigest(c, s.dst, "y/r11", "1.0.0"), check.Equals, "")
	for _, t := range []string{"1.1.0", "1.2.0", "2.0.0"} {
		c.Assert(dstDigest(c, s.dst, "y/r12", t), check.Equals, s.ns[syncRepo(12)][t])
	}
	for _, h := range s.src.TokenCounter.HeaderValues("Authorization") {
		c.Assert(strings.Contains(h, "bm9ib2R5"), check.Equals, false, check.Commentf("the YAML's username was sent"))
	}
}

// --with-referrers carries a cosign signature of each image synced, in
// both schemas: the legacy sha256-<hex>.sig tag and a bundle referrer
// (the referrers tag schema on distribution); cosign verifies the mirror
// with the signer's key. A re-run with nothing to do moves no referrer.
func (s *SyncSuite) TestSyncWithReferrersCarriesCosignSignature(c *check.C) {
	bin := cosignBinary(c)
	src := s.startRegistry(c, testregistry.Options{})
	keys := c.MkDir()
	runCosign(c, bin, keys, "generate-key-pair", "--output-key-prefix", filepath.Join(keys, "signer"))
	imgs := map[string]*testregistry.Image{}
	for i, bundle := range []bool{false, true} {
		repo := fmt.Sprintf("signed/s%d", i)
		img := pushImage(c, src, repo, "1", testregistry.ImageOptions{Layers: 1})
		imgs[repo] = img
		args := append(append([]string{}, cosignSignArgs...), "--key", filepath.Join(keys, "signer.key"),
			fmt.Sprintf("--new-bundle-format=%v", bundle), src.Host+"/"+repo+"@"+img.Manifest.Digest)
		runCosign(c, bin, keys, args...)
	}
	evs, r := s.syncJSON(c, "--with-referrers", src.Host+"/signed", s.dst.Host+"/signed")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	sum := evs[len(evs)-1].Summary
	c.Assert(sum.Synced, check.Equals, 2, check.Commentf("%s", r))
	referrers := 0
	for _, ev := range evs {
		if ev.Copy != nil {
			referrers += ev.Copy.Referrers
		}
	}
	c.Assert(referrers, check.Equals, 2, check.Commentf("%s", r))

	sigTag := "sha256-" + strings.TrimPrefix(imgs["signed/s0"].Manifest.Digest, "sha256:") + ".sig"
	want := dstDigest(c, src, "signed/s0", sigTag)
	c.Assert(want, check.Not(check.Equals), "")
	c.Assert(dstDigest(c, s.dst, "signed/s0", sigTag), check.Equals, want)
	schemaTag := "sha256-" + strings.TrimPrefix(imgs["signed/s1"].Manifest.Digest, "sha256:")
	c.Assert(dstDigest(c, s.dst, "signed/s1", schemaTag), check.Not(check.Equals), "", check.Commentf("no referrers index at dst"))
	for repo, img := range imgs {
		runCosign(c, bin, keys, "verify", "--key", filepath.Join(keys, "signer.pub"), "--insecure-ignore-tlog=true",
			"--allow-insecure-registry", "--allow-http-registry", s.dst.Host+"/"+repo+"@"+img.Manifest.Digest)
	}
}

// --rate-limit-floor: a source whose answers say fewer requests remain
// than the floor is paused until its window (w=2: 2 s) has passed, the
// stream says so, and the sync then completes.
func (s *SyncSuite) TestSyncRateLimitFloorPauses(c *check.C) {
	src := s.startRegistry(c, testregistry.Options{})
	for i := range 6 {
		pushImage(c, src, fmt.Sprintf("rl/a%d", i), "1", testregistry.ImageOptions{Layers: 1})
	}
	var (
		mu        sync.Mutex
		served    int
		exhausted time.Time
	)
	proxy, err := hostile.NewHookProxy(src.URL, func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		// Every answer spends one of 10; the plan alone (the
		// namespace's tag list, the catalog, 6 tag lists) leaves 2,
		// under the floor of 3, before the first image. Once the
		// window has passed since then, a fresh quota.
		remaining := 100
		if exhausted.IsZero() || time.Since(exhausted) < 2*time.Second {
			served++
			remaining = max(0, 10-served)
			if remaining < 3 && exhausted.IsZero() {
				exhausted = time.Now()
			}
		}
		w.Header().Set("RateLimit-Limit", "10;w=2")
		w.Header().Set("RateLimit-Remaining", fmt.Sprintf("%d;w=2", remaining))
		return false
	}, nil)
	c.Assert(err, check.IsNil)
	defer proxy.Close()

	evs, r := s.syncJSON(c, "--rate-limit-floor", "3", proxy.Host+"/rl", s.dst.Host+"/rl")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	c.Assert(evs[len(evs)-1].Summary.Synced, check.Equals, 6, check.Commentf("%s", r))
	paused := 0
	for _, ev := range evs {
		if ev.Status == types.SyncPaused {
			paused++
			c.Assert(ev.Registry, check.Equals, proxy.Host)
			c.Assert(ev.Until, check.Not(check.Equals), "")
		}
	}
	c.Assert(paused >= 1, check.Equals, true, check.Commentf("%s", r))
}

// Across the air gap: registry → `wharf sync SRC oci-archive:FILE` → the
// archive, which skopeo and oras read by its ref names → `wharf sync
// oci-archive:FILE DST` into another registry, with the digests equal,
// a multi-platform index whole, and a cosign signature carried with
// --with-referrers. A second import has nothing to do.
func (s *SyncSuite) TestSyncAirGapRoundTrip(c *check.C) {
	src := s.startRegistry(c, testregistry.Options{})
	other := s.startRegistry(c, testregistry.Options{})
	one := pushImage(c, src, "airgap/app", "1", testregistry.ImageOptions{Layers: 2, LayerSize: 4096})
	ix := pushIndex(c, src, "airgap/app", "2", testregistry.IndexOptions{})
	pushImage(c, src, "airgap/app", "dev", testregistry.ImageOptions{Layers: 1})
	bin := cosignBinary(c)
	keys := c.MkDir()
	runCosign(c, bin, keys, "generate-key-pair", "--output-key-prefix", filepath.Join(keys, "signer"))
	runCosign(c, bin, keys, append(append([]string{}, cosignSignArgs...), "--key", filepath.Join(keys, "signer.key"),
		"--new-bundle-format=false", src.Host+"/airgap/app@"+one.Manifest.Digest)...)

	file := filepath.Join(c.MkDir(), "mirror.tar")
	r := s.d.WharfOK(c, "sync", "--with-referrers", "--tag-regex", `^\d+$`, src.Host+"/airgap/app", "oci-archive:"+file)
	c.Assert(r.Stderr, check.Matches, `(?s).*2 images: 2 synced, 0 skipped, 0 failed.*`)

	// skopeo reads it by ref name, byte for byte.
	skopeo := requireClient(c, "skopeo", "skopeo")
	for ref, want := range map[string]string{"airgap/app:1": one.Manifest.Digest, "airgap/app:2": ix.Digest()} {
		out, err := exec.Command(skopeo, "inspect", "--raw", "oci-archive:"+file+":"+ref).Output()
		c.Assert(err, check.IsNil, check.Commentf("skopeo inspect %s: %s", ref, out))
		c.Assert(digest.FromBytes(out).String(), check.Equals, want, check.Commentf("skopeo read %s", ref))
	}
	out, err := exec.Command(skopeo, "copy", "--dest-tls-verify=false", "oci-archive:"+file+":airgap/app:1", "docker://"+other.Host+"/skopeo/app:1").CombinedOutput()
	c.Assert(err, check.IsNil, check.Commentf("skopeo copy: %s", out))
	c.Assert(dstDigest(c, other, "skopeo/app", "1"), check.Equals, one.Manifest.Digest)
	// oras too (an extracted layout: oras reads directories), by digest:
	// its layout references end in a plain tag, and the ref names are
	// path:tag.
	if oras := orasBinary(c); oras != "" {
		dir := c.MkDir()
		out, err = exec.Command("tar", "-xf", file, "-C", dir).CombinedOutput()
		c.Assert(err, check.IsNil, check.Commentf("%s", out))
		out, err = exec.Command(oras, "manifest", "fetch", "--oci-layout", dir+"@"+one.Manifest.Digest).Output()
		c.Assert(err, check.IsNil, check.Commentf("oras manifest fetch: %s", out))
		c.Assert(digest.FromBytes(out).String(), check.Equals, one.Manifest.Digest)
	}

	evs, r := s.syncJSON(c, "oci-archive:"+file, other.Host+"/imported")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	c.Assert(evs[len(evs)-1].Summary.Synced, check.Equals, 2, check.Commentf("%s", r))
	for _, ev := range evs {
		// Each image's blob count is what it moved (the CLI prints "N blobs:
		// E existed, M mounted, U uploaded"; an import once said 0 blobs).
		if ev.Copy != nil {
			c.Assert(ev.Copy.Blobs > 0 && ev.Copy.Blobs == ev.Copy.Existed+ev.Copy.Mounted+ev.Copy.Uploaded, check.Equals, true, check.Commentf("%+v", *ev.Copy))
		}
	}
	c.Assert(dstDigest(c, other, "imported/app", "1"), check.Equals, one.Manifest.Digest)
	c.Assert(dstDigest(c, other, "imported/app", "2"), check.Equals, ix.Digest())
	for _, img := range ix.Images {
		c.Assert(dstDigest(c, other, "imported/app", img.Manifest.Digest), check.Equals, img.Manifest.Digest)
	}
	c.Assert(dstDigest(c, other, "imported/app", "dev"), check.Equals, "")
	sigTag := "sha256-" + strings.TrimPrefix(one.Manifest.Digest, "sha256:") + ".sig"
	c.Assert(dstDigest(c, other, "imported/app", sigTag), check.Equals, dstDigest(c, src, "airgap/app", sigTag))
	runCosign(c, bin, keys, "verify", "--key", filepath.Join(keys, "signer.pub"), "--insecure-ignore-tlog=true",
		"--allow-insecure-registry", "--allow-http-registry", other.Host+"/imported/app@"+one.Manifest.Digest)

	// The import left nothing in the data-root.
	left, err := os.ReadDir(filepath.Join(s.d.Root, "ingest"))
	c.Assert(err, check.IsNil)
	c.Assert(left, check.HasLen, 0, check.Commentf("ingest/ after the import: %v", left))

	other.ResetCounters()
	evs, r = s.syncJSON(c, "oci-archive:"+file, other.Host+"/imported")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	c.Assert(evs[len(evs)-1].Summary.Skipped, check.Equals, 2, check.Commentf("%s", r))
	c.Assert(other.Counter.Total(), check.Equals, 2, check.Commentf("%s", other.Counter.Summary()))

	// A stream: oci-archive:- to stdout is the same archive.
	r = s.d.WharfOK(c, "sync", "--tag-regex", `^1$`, src.Host+"/airgap/app", "oci-archive:-")
	c.Assert(strings.Contains(r.Stdout, "index.json"), check.Equals, true)
}

// orasBinary is .cache/bin/oras (make oras), or "" outside CI when it
// was not built.
func orasBinary(c *check.C) string {
	root, err := testregistry.RepoRoot()
	c.Assert(err, check.IsNil)
	bin := filepath.Join(root, ".cache", "bin", "oras")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			c.Fatalf("oras is missing: make integration builds it (make oras)")
		}
		c.Logf("oras not built (make oras): the archive is not read with it")
		return ""
	}
	return bin
}

// A token the registry refuses: it is fetched again once for the request
// that met the 401 and the sync goes on; a registry that refuses every
// token fails the image (class unauthorized or denied) after a bounded
// number of token requests, never a loop.
func (s *SyncSuite) TestSyncRefusedTokenRefreshedNeverLooped(c *check.C) {
	var (
		mu      sync.Mutex
		refuse  int // the next n authorized manifest requests are refused
		refused int
	)
	proxy, err := hostile.NewHookProxy(s.src.URL, func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if refuse != 0 && r.Header.Get("Authorization") != "" && strings.Contains(r.URL.Path, "/manifests/") {
			// The registry itself answers, without the token: its 401
			// and its challenge, as for a token that expired.
			r.Header.Del("Authorization")
			refused++
			if refuse > 0 {
				refuse--
			}
		}
		return false
	}, nil)
	c.Assert(err, check.IsNil)
	defer proxy.Close()
	s.d.WharfIn(c, []byte(s.src.Password+"\n"), "login", proxy.Host, "-u", s.src.Username, "--password-stdin")
	src := proxy.Host + "/" + syncRepo(15)

	// One refusal: refreshed once, synced.
	mu.Lock()
	refuse = 1
	mu.Unlock()
	s.src.TokenCounter.Reset()
	evs, r := s.syncJSON(c, "--tag-regex", "^1.0.0$", src, s.dst.Host+"/tok")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	c.Assert(evs[len(evs)-1].Summary.Synced, check.Equals, 1, check.Commentf("%s", r))
	c.Assert(dstDigest(c, s.dst, "tok/r15", "1.0.0"), check.Equals, s.ns[syncRepo(15)]["1.0.0"])
	mu.Lock()
	c.Assert(refused, check.Equals, 1)
	mu.Unlock()

	// Every token refused: the image fails, the token requests stay few.
	mu.Lock()
	refuse, refused = -1, 0
	mu.Unlock()
	s.src.TokenCounter.Reset()
	evs, r = s.syncJSON(c, "--keep-going", "--tag-regex", "^1.1.0$", src, s.dst.Host+"/tok")
	c.Assert(r.ExitCode, check.Equals, 1, check.Commentf("%s", r))
	sum := evs[len(evs)-1].Summary
	c.Assert(sum.Failed, check.Equals, 1, check.Commentf("%s", r))
	c.Assert(sum.Failures[0].Class, check.Matches, "unauthorized|denied", check.Commentf("%+v", sum.Failures[0]))
	mu.Lock()
	n := refused
	mu.Unlock()
	c.Assert(n <= 4, check.Equals, true, check.Commentf("%d refused requests", n))
	c.Assert(s.src.TokenCounter.Total() <= 4, check.Equals, true, check.Commentf("%s", s.src.TokenCounter.Summary()))
}

// --platform: the destination holds the platform manifest (its digest as
// the source's index lists it), and a re-run compares that digest, so it
// skips. The metrics count synced, skipped and failed images per source
// registry.
func (s *SyncSuite) TestSyncPlatformAndMetrics(c *check.C) {
	d := s.startDaemon(c, "--metrics-addr", "127.0.0.1:0")
	m := metricsListening.FindStringSubmatch(d.Log())
	c.Assert(m, check.NotNil, check.Commentf("no metrics address in the log:\n%s", d.Log()))
	ms := &MetricsSuite{url: m[1]}
	src := s.startRegistry(c, testregistry.Options{})
	ix := pushIndex(c, src, "plat/app", "1", testregistry.IndexOptions{})
	var arm string
	for _, img := range ix.Images {
		if img.Platform.Architecture == "arm64" {
			arm = img.Manifest.Digest
		}
	}
	c.Assert(arm, check.Not(check.Equals), "")

	for i, want := range []string{types.SyncSynced, types.SyncSkipped} {
		r := d.Wharf(c, "sync", "--format", "json", "--platform", "linux/arm64", src.Host+"/plat/app", s.dst.Host+"/plat")
		c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("round %d: %s", i, r))
		c.Assert(strings.Contains(r.Stdout, `"status":"`+want+`"`), check.Equals, true, check.Commentf("round %d: %s", i, r))
		c.Assert(dstDigest(c, s.dst, "plat/app", "1"), check.Equals, arm)
	}
	r := d.Wharf(c, "sync", "--keep-going", src.Host+"/plat/app:nope", s.dst.Host+"/plat")
	c.Assert(r.ExitCode, check.Equals, 1, check.Commentf("%s", r))

	fams := ms.scrape(c)
	for outcome, n := range map[string]float64{"synced": 1, "skipped": 1, "failed": 1} {
		c.Assert(fams.value(c, "wharf_sync_images_total", map[string]string{"registry": src.Host, "outcome": outcome}), check.Equals, n, check.Commentf("%s", outcome))
	}
}

// --with-referrers between two registries that serve the referrers API
// (go-containerregistry's): a cosign bundle found through the API at the
// source is listed by the destination's API, and cosign verifies there.
func (s *SyncSuite) TestSyncWithReferrersAPI(c *check.C) {
	bin := cosignBinary(c)
	src, dst := startSpecReferrersRegistry(c), startSpecReferrersRegistry(c)
	s.closeAtEnd(src.Close)
	s.closeAtEnd(dst.Close)
	keys := c.MkDir()
	runCosign(c, bin, keys, "generate-key-pair", "--output-key-prefix", filepath.Join(keys, "signer"))
	img, err := testregistry.NewImage(testregistry.ImageOptions{Layers: 1})
	c.Assert(err, check.IsNil)
	ctx, cancel := fixtureCtx()
	defer cancel()
	c.Assert(src.Client().PushImage(ctx, "api/app", "1", img), check.IsNil)
	runCosign(c, bin, keys, append(append([]string{}, cosignSignArgs...), "--key", filepath.Join(keys, "signer.key"),
		"--new-bundle-format=true", src.Host+"/api/app@"+img.Manifest.Digest)...)

	evs, r := s.syncJSON(c, "--with-referrers", src.Host+"/api/app", dst.Host+"/mirror")
	c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s", r))
	c.Assert(evs[len(evs)-1].Summary.Synced, check.Equals, 1, check.Commentf("%s", r))
	c.Assert(evs[0].Copy.Referrers, check.Equals, 1, check.Commentf("%s", r))

	resp, err := http.Get(dst.Counter.URL + "/v2/mirror/app/referrers/" + img.Manifest.Digest)
	c.Assert(err, check.IsNil)
	defer resp.Body.Close()
	var idx struct{ Manifests []struct{ Digest string } }
	c.Assert(json.NewDecoder(resp.Body).Decode(&idx), check.IsNil)
	c.Assert(idx.Manifests, check.HasLen, 1, check.Commentf("the destination's referrers API lists %+v", idx))
	runCosign(c, bin, keys, "verify", "--key", filepath.Join(keys, "signer.pub"), "--insecure-ignore-tlog=true",
		"--allow-insecure-registry", "--allow-http-registry", dst.Host+"/mirror/app@"+img.Manifest.Digest)
}

// A hostile archive (an entry that leaves the layout) is refused before
// anything is pushed, and leaves nothing in the data-root.
func (s *SyncSuite) TestSyncImportRefusesHostileArchive(c *check.C) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct{ name, data string }{
		{"oci-layout", `{"imageLayoutVersion":"1.0.0"}`},
		{"../../escape", "x"},
		{"index.json", `{"schemaVersion":2,"manifests":[]}`},
	} {
		c.Assert(tw.WriteHeader(&tar.Header{Name: e.name, Size: int64(len(e.data)), Mode: 0o644, Typeflag: tar.TypeReg}), check.IsNil)
		_, err := tw.Write([]byte(e.data))
		c.Assert(err, check.IsNil)
	}
	c.Assert(tw.Close(), check.IsNil)
	file := filepath.Join(c.MkDir(), "hostile.tar")
	c.Assert(os.WriteFile(file, buf.Bytes(), 0o600), check.IsNil)
	r := s.d.Wharf(c, "sync", "oci-archive:"+file, s.dst.Host+"/hostile")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Assert(r.Stderr, check.Matches, `(?s).*not part of an OCI image layout.*`)
	left, err := os.ReadDir(filepath.Join(s.d.Root, "ingest"))
	c.Assert(err, check.IsNil)
	c.Assert(left, check.HasLen, 0)
	_, err = os.Stat(filepath.Join(s.d.Root, "escape"))
	c.Assert(os.IsNotExist(err), check.Equals, true)
}

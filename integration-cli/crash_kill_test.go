package integration

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// crashRounds is how many kill -9 rounds TestKill9DuringWrites runs; each
// restarts wharfd once. WHARF_CRASH_ROUNDS raises it for a longer soak.
const crashRounds = 25

// TestKill9DuringWrites SIGKILLs wharfd during pulls, pushes, loads, tags
// and rmis, at offsets from a seeded random sequence (the seed is in the
// test log; WHARF_CRASH_SEED replays it), restarts it on the same data-root
// and checks that no partial image is visible, the full store check is
// clean, no blob is left that no image uses (the check's UnreferencedBlobs
// is 0), and a pull after the crash reuses every layer already stored.
func (s *CrashSuite) TestKill9DuringWrites(c *check.C) {
	seed := time.Now().UnixNano()
	if v := os.Getenv("WHARF_CRASH_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseInt(v, 10, 64)
		c.Assert(err, check.IsNil)
	}
	rounds := crashRounds
	if v, err := strconv.Atoi(os.Getenv("WHARF_CRASH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	c.Logf("crash seed %d (replay with WHARF_CRASH_SEED=%d), %d rounds", seed, seed, rounds)
	rng := rand.New(rand.NewSource(seed))

	reg := s.regs.anon
	// Three images of 4 × 512 KiB layers: enough progress messages and
	// bytes for kills to land in the middle of a layer.
	var imgs []*testregistry.Image
	for i := 0; i < 3; i++ {
		imgs = append(imgs, pushImage(c, reg, fmt.Sprintf("crash/img%d", i), "v1", testregistry.ImageOptions{Layers: 4, LayerSize: 512 << 10}))
	}
	name := func(i int) string { return fmt.Sprintf("%s/crash/img%d", reg.Host, i) }

	d := StartDaemon(c)
	defer d.Kill()

	// A docker-save archive of img0 for the load rounds, made once.
	_, lines := d.Pull(c, name(0), "v1", "")
	c.Assert(lines.Err(), check.Equals, "")
	saved := d.Get(c, "/v1.50/images/get?names="+url.QueryEscape(name(0)+":v1"))
	c.Assert(saved.Status, check.Equals, http.StatusOK)
	archive := saved.Body
	c.Assert(d.Req(c, http.MethodDelete, "/v1.50/images/"+name(0)+":v1", nil).Status, check.Equals, http.StatusOK)

	emptyAuth := http.Header{"X-Registry-Auth": {base64.URLEncoding.EncodeToString([]byte("{}"))}}
	rootfs, err := testregistry.RandomTar("data.bin", 2<<20)
	c.Assert(err, check.IsNil)

	ops := []string{"pull", "pull", "pull-ingest", "push", "load", "import", "tag", "rmi"}
	counts := map[string]int{}
	kills := 0
	for round := 0; round < rounds; round++ {
		op := ops[rng.Intn(len(ops))]
		i := rng.Intn(len(imgs))
		var killed bool
		var what string
		switch op {
		case "pull":
			k := 1 + rng.Intn(30)
			what = fmt.Sprintf("round %d: pull %s, kill after message %d", round, name(i), k)
			q := url.Values{"fromImage": {name(i)}, "tag": {"v1"}}
			_, killed = streamUntil(c, d, http.MethodPost, "/v1.50/images/create?"+q.Encode(), nil, nil, nil,
				func(n int, _ map[string]any) bool { return n >= k })
		case "pull-ingest":
			// Kill while a layer is half written: when a file in ingest/
			// reaches n bytes.
			// Remove the image first so that its layers are downloaded.
			// (by ID with force: other tags may hold it).
			d.Req(c, http.MethodDelete, "/v1.50/images/"+imgs[i].ID()+"?force=1", nil)
			n := 1 + rng.Int63n(512<<10)
			what = fmt.Sprintf("round %d: pull %s, kill when an ingest file reaches %d bytes", round, name(i), n)
			w := watchIngest(d, n)
			q := url.Values{"fromImage": {name(i)}, "tag": {"v1"}}
			_, _ = streamUntil(c, d, http.MethodPost, "/v1.50/images/create?"+q.Encode(), nil, nil, w.killed,
				func(int, map[string]any) bool { return false })
			killed = w.stop()
			op = "pull"
		case "push":
			// Push needs a local image: pull it first (not interrupted).
			_, lines := d.Pull(c, name(i), "v1", "")
			c.Assert(lines.Err(), check.Equals, "", check.Commentf("round %d", round))
			tag := fmt.Sprintf("p%d", round)
			c.Assert(d.Req(c, http.MethodPost, "/v1.50/images/"+name(i)+":v1/tag?repo="+url.QueryEscape(reg.Host+"/crash/pushed")+"&tag="+tag, nil).Status, check.Equals, http.StatusCreated)
			k := 1 + rng.Intn(12)
			what = fmt.Sprintf("round %d: push %s/crash/pushed:%s, kill after message %d", round, reg.Host, tag, k)
			_, killed = streamUntil(c, d, http.MethodPost, "/v1.50/images/"+reg.Host+"/crash/pushed/push?tag="+tag, nil, emptyAuth, nil,
				func(n int, _ map[string]any) bool { return n >= k })
		case "load":
			off := rng.Int63n(int64(len(archive)))
			what = fmt.Sprintf("round %d: load of %d bytes, kill after %d bytes read", round, len(archive), off)
			kr := &killingReader{r: bytes.NewReader(archive), after: off, kill: d.Kill, killed: make(chan struct{})}
			_, killed = streamUntil(c, d, http.MethodPost, "/v1.50/images/load", kr, http.Header{"Content-Type": {"application/x-tar"}}, kr.killed,
				func(int, map[string]any) bool { return false })
		case "import":
			off := rng.Int63n(int64(len(rootfs)))
			what = fmt.Sprintf("round %d: import of %d bytes, kill after %d bytes read", round, len(rootfs), off)
			kr := &killingReader{r: bytes.NewReader(rootfs), after: off, kill: d.Kill, killed: make(chan struct{})}
			q := url.Values{"fromSrc": {"-"}, "repo": {fmt.Sprintf("local/imported:%d", round)}}
			_, killed = streamUntil(c, d, http.MethodPost, "/v1.50/images/create?"+q.Encode(), kr, http.Header{"Content-Type": {"application/x-tar"}}, kr.killed,
				func(int, map[string]any) bool { return false })
		case "tag", "rmi":
			// One quick request: kill as soon as it is written, or once
			// its answer has started.
			_, lines := d.Pull(c, name(i), "v1", "")
			c.Assert(lines.Err(), check.Equals, "", check.Commentf("round %d", round))
			path := "/v1.50/images/" + name(i) + ":v1/tag?repo=" + url.QueryEscape("local/tagged") + "&tag=" + strconv.Itoa(round)
			method := http.MethodPost
			if op == "rmi" {
				method, path = http.MethodDelete, "/v1.50/images/"+name(i)+":v1"
			}
			waitAnswer := rng.Intn(2) == 0
			what = fmt.Sprintf("round %d: %s %s, kill after the request (answer awaited: %v)", round, method, path, waitAnswer)
			conn := rawRequest(c, d, method, path)
			if waitAnswer {
				c.Logf("%s: answer %q", what, readStatusLine(conn))
			}
			d.Kill()
			conn.Close()
			killed = true
		}
		if !killed {
			d.Kill() // the operation won the race: crash right after it
		}
		kills++
		counts[op]++
		c.Logf("%s (killed mid-operation: %v)", what, killed)

		afterCrash(c, d, what)
		// Layers still stored after the restart must be reused by the next
		// pull. (Start-up collects the blobs no image uses: a pull killed
		// before it recorded its image leaves nothing behind, so its next
		// attempt downloads again — no orphans is the rule, issue 9.)
		var stored []string
		for _, l := range imgs[i].Layers {
			if fileExists(filepath.Join(d.Root, "blobs", "sha256", strings.TrimPrefix(l.Digest, "sha256:"))) {
				stored = append(stored, l.Digest)
			}
		}
		if op == "pull" {
			_, lines := d.Pull(c, name(i), "v1", "")
			c.Assert(lines.Err(), check.Equals, "", check.Commentf("%s: pull after restart", what))
			// A layer stored after the restart is never fetched again: no
			// "Pulling fs layer", "Downloading" or "Pull complete" for it
			// (it shows as "Already exists", or the pull shows no layer
			// lines at all when every blob is already there).
			for _, dg := range stored {
				id := strings.TrimPrefix(dg, "sha256:")[:12]
				for _, st := range []string{"Pulling fs layer", "Downloading", "Download complete", "Pull complete"} {
					c.Assert(hasStatus(lines, st, id), check.Equals, false,
						check.Commentf("%s: layer %s was stored before the crash but fetched again:\n%v", what, id, lines.Texts()))
				}
				if len(stored) < len(imgs[i].Layers) {
					c.Assert(hasStatus(lines, "Already exists", id), check.Equals, true,
						check.Commentf("%s: layer %s not reported as reused:\n%v", what, id, lines.Texts()))
				}
			}
			rep, code := systemCheck(c, d)
			c.Assert(code, check.Equals, 0, check.Commentf("%s: after the re-pull:\n%s", what, rep))
			c.Assert(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("%s: orphan blobs after the re-pull", what))
		}
	}
	c.Logf("%d kills: %v", kills, counts)
}

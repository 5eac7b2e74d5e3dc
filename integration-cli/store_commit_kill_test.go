package integration

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/check.v1"
)

// CommitCrashSuite SIGKILLs wharfd while tags are being committed to
// wharf/meta.db, so that kills land inside bbolt write transactions and
// their fsyncs, and between a commit and the index.json write that follows
// it (docs/reliability.md, the crash table).
type CommitCrashSuite struct {
	suiteFixture
}

func TestCommitCrashSuite(t *testing.T) { t.Parallel(); runSuite(t, &CommitCrashSuite{}) }

// commitKillRounds is how many kills TestKill9DuringTagCommits makes;
// WHARF_CRASH_ROUNDS raises it.
const commitKillRounds = 6

// tagWriters is how many clients tag at once: enough that wharfd is nearly
// always inside a commit (group commit batches them), so a kill after the
// k-th answer lands in one.
const tagWriters = 8

// TestKill9DuringTagCommits: tagWriters clients tag images as fast as
// wharfd answers; after the k-th 201 (k from a seeded sequence) wharfd is
// SIGKILLed. After the restart every tag that was answered 201 — before the
// kill or read from the socket after it — names its image (a commit that
// answered is durable), every tag wharfd lists inspects (no half change:
// a transaction not committed left nothing), the store check is clean,
// and index.json, behind the records at the kill, lists every tag once
// `wharf system export-index` has run.
func (s *CommitCrashSuite) TestKill9DuringTagCommits(c *check.C) {
	needBinaries(c)
	seed := time.Now().UnixNano()
	if v, err := strconv.ParseInt(os.Getenv("WHARF_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	rounds := commitKillRounds
	if v, err := strconv.Atoi(os.Getenv("WHARF_CRASH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	rng := rand.New(rand.NewSource(seed))
	c.Logf("seed %d (replay with WHARF_CRASH_SEED=%d), %d rounds", seed, seed, rounds)

	d := StartDaemon(c)
	defer d.Kill()
	ids := map[string]string{} // base name → image ID
	for i := 0; i < 4; i++ {
		name := fmt.Sprintf("local/base%d:1", i)
		ids[name] = d.Import(c, name)
	}
	bases := make([]string, 0, len(ids))
	for n := range ids {
		bases = append(bases, n)
	}
	sort.Strings(bases)

	acked := map[string]string{} // tag → image ID, every 201 of every round
	behind, lost := 0, 0
	for round := 0; round < rounds; round++ {
		k := 1 + rng.Intn(150)
		var mu sync.Mutex
		answered := 0
		reached := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < tagWriters; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				hc := d.HTTPClient()
				hc.Timeout = crashStreamTimeout
				defer hc.CloseIdleConnections()
				for n := 0; ; n++ {
					base := bases[(w+n)%len(bases)]
					tag := fmt.Sprintf("r%d-w%d-%d", round, w, n)
					req, _ := http.NewRequest(http.MethodPost, "http://wharfd/v1.50/images/"+base+"/tag?repo="+url.QueryEscape("local/crash")+"&tag="+tag, nil)
					resp, err := hc.Do(req)
					if err != nil {
						return // the kill
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated {
						return
					}
					mu.Lock()
					acked["local/crash:"+tag] = ids[base]
					answered++
					if answered == k {
						close(reached)
					}
					mu.Unlock()
				}
			}(w)
		}
		select {
		case <-reached:
		case <-time.After(crashStreamTimeout):
			c.Fatalf("round %d: %d tags answered in %s, waiting for %d", round, answered, crashStreamTimeout, k)
		}
		d.Kill()
		wg.Wait()
		// What index.json held at the kill, against the tags answered.
		var idx ociIndex
		if b, err := os.ReadFile(filepath.Join(d.Root, "index.json")); err == nil {
			_ = json.Unmarshal(b, &idx)
		}
		inIndex := map[string]bool{}
		for _, m := range idx.Manifests {
			inIndex[familiar(m.Annotations["io.containerd.image.name"])] = true
		}
		missing := 0
		for t := range acked {
			if !inIndex[t] {
				missing++
			}
		}
		if missing > 0 {
			behind++
		}
		c.Logf("round %d: killed after answer %d (%d answered in the round; %d answered in all, %d of them not yet in index.json)", round, k, answered, len(acked), missing)

		what := fmt.Sprintf("round %d", round)
		afterCrash(c, d, what)
		// Every answered tag is there, naming its image.
		var list []struct {
			ID       string `json:"Id"`
			RepoTags []string
		}
		d.Get(c, "/v1.50/images/json").JSON(c, &list)
		tags := map[string]string{}
		for _, im := range list {
			for _, t := range im.RepoTags {
				tags[t] = im.ID
			}
		}
		c.Assert(list, check.HasLen, len(ids), check.Commentf("%s: tags add no image", what))
		for t, id := range acked {
			c.Assert(tags[t], check.Equals, id, check.Commentf("%s: %s was answered 201 before the kill", what, t))
		}
		// Tags committed whose answer the kill lost: the kill fell between
		// a commit and its answers.
		unanswered := 0
		for t := range tags {
			if _, ok := acked[t]; !ok && strings.HasPrefix(t, fmt.Sprintf("local/crash:r%d-", round)) {
				unanswered++
			}
		}
		lost += unanswered
		c.Logf("%s: %d tags committed but not answered before the kill", what, unanswered)
		// index.json catches up: export-index, then one entry per tag.
		exp := d.WharfOK(c, "system", "export-index", "--json")
		var rep struct{ Entries int }
		c.Assert(json.Unmarshal([]byte(exp.Stdout), &rep), check.IsNil)
		c.Assert(rep.Entries, check.Equals, len(tags), check.Commentf("%s: index.json entries", what))
		idx = readIndex(c, d.Root)
		for _, m := range idx.Manifests {
			delete(tags, familiar(m.Annotations["io.containerd.image.name"]))
		}
		c.Assert(tags, check.HasLen, 0, check.Commentf("%s: tags missing from index.json after export-index", what))
	}
	c.Logf("%d rounds, %d tags answered in all, %d committed without an answer; index.json was behind the answered tags at %d of the kills", rounds, len(acked), lost, behind)
}

// familiar is a fully qualified name of index.json (io.containerd.image.name)
// in the form the API lists (docker.io/ dropped; the tags here are not
// under library/).
func familiar(name string) string { return strings.TrimPrefix(name, "docker.io/") }

package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// StoreRaceSuite reproduces store finding 1: a pull or a load that relies on
// blobs another image already brought races an rmi/prune of that image (or a
// failing load of the same blobs), and garbage collection deletes the shared
// blobs under it. The old store checked blob presence before taking its lock
// and counted only recorded images as in use, so the pull/load failed
// ("layer … not stored", "layer … missing") or succeeded with layers missing
// (`wharf system check`: missing-blob).
//
// Images A and B (in a real CNCF registry) share raceSharedLayers base
// layers and each has one layer of its own. Every round starts from a known
// state, then releases the two operations together through a channel.
type StoreRaceSuite struct {
	suiteFixture
	reg *testregistry.Registry
	d   *Daemon
	cl  *http.Client // keep-alive client on wharfd's socket, safe in goroutines

	a, b       *testregistry.Image
	aRef, bRef string // host/race/a:1, host/race/b:1
	bRepo      string // host/race/b

	archiveA []byte // docker-save archive of A (GET /images/get), made once
}

func TestStoreRaceSuite(t *testing.T) { t.Parallel(); runSuite(t, &StoreRaceSuite{}) }

const (
	raceSharedLayers = 3
	raceLayerSize    = 3 << 10 // random bytes per layer: a few KiB keeps a round to milliseconds
	raceRoleLabel    = "wharf.test.race"

	racePullRounds    = 80
	raceLoadRounds    = 80
	raceBadLoadRounds = 40

	// raceOpTimeout bounds one API call of a round.
	raceOpTimeout = 30 * time.Second
	// raceFirstErrors is how many round failures the summary quotes.
	raceFirstErrors = 6
)

func (s *StoreRaceSuite) SetUpSuite(c *check.C) {
	s.reg = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
	sock := s.d.Sock
	s.cl = &http.Client{
		Timeout: raceOpTimeout,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var dl net.Dialer
				return dl.DialContext(ctx, "unix", sock)
			},
			MaxIdleConnsPerHost: 8,
			DisableCompression:  true,
		},
	}

	shared := make([]raceLayer, raceSharedLayers)
	for i := range shared {
		shared[i] = newRaceLayer(c, fmt.Sprintf("base%d/data.bin", i))
	}
	s.a = newRaceImage(c, append(append([]raceLayer{}, shared...), newRaceLayer(c, "a/data.bin")), "a")
	s.b = newRaceImage(c, append(append([]raceLayer{}, shared...), newRaceLayer(c, "b/data.bin")), "b")
	ctx, cancel := fixtureCtx()
	defer cancel()
	cli := s.reg.Client()
	c.Assert(cli.PushImage(ctx, "race/a", "1", s.a), check.IsNil)
	c.Assert(cli.PushImage(ctx, "race/b", "1", s.b), check.IsNil)
	s.aRef = s.reg.Host + "/race/a:1"
	s.bRepo = s.reg.Host + "/race/b"
	s.bRef = s.bRepo + ":1"
}

func (s *StoreRaceSuite) TearDownSuite(c *check.C) {
	if s.cl != nil {
		s.cl.CloseIdleConnections()
	}
	s.suiteFixture.TearDownSuite(c)
}

// --- fixtures ---------------------------------------------------------------

// TestPullVsRemoveSharedLayers: each round B is present and A absent; a pull
// of A (whose base layers B brought: "Already exists") races the removal of
// B — rmi, prune dangling=false by label, or prune of an untagged B. Both
// must succeed, A's blobs must all be on disk and the store check must find
// nothing, every round. Half the rounds release both at once; in the other
// half the removal waits until the pull has reported a reused layer
// ("Already exists"), which puts it inside the pull, between the moment it
// relies on B's blobs and the moment A is recorded.
func (s *StoreRaceSuite) TestPullVsRemoveSharedLayers(c *check.C) {
	pullA := func(reused chan struct{}) raceOp { return s.pullNotify(s.reg.Host+"/race/a", "1", reused) }
	// Without concurrency the sequence works: what fails below is the race.
	s.reset(c)
	s.putB(c, removeRmi)
	add := pullA(nil)
	rem := s.removeB(removeRmi)
	c.Assert(s.judgeAddVsRemove("pull", add, rem), check.HasLen, 0, check.Commentf("sequential pull A, rmi B"))

	t := newRaceTally("pull A vs rmi/prune B")
	aligned := 0
	start := time.Now()
	for n := 0; n < racePullRounds; n++ {
		mode := raceRemoveMode((n / 2) % int(raceRemoveModes))
		s.reset(c)
		s.putB(c, mode)
		var add, rem raceOp
		label := mode.String() + ", together"
		if n%2 == 0 {
			add, rem = race(func() raceOp { return pullA(nil) }, func() raceOp { return s.removeB(mode) })
		} else {
			label = mode.String() + ", after \"Already exists\""
			reused, pulled := make(chan struct{}), make(chan struct{})
			add, rem = race(
				func() raceOp { defer close(pulled); return pullA(reused) },
				func() raceOp {
					select {
					case <-reused:
					case <-pulled: // no reuse reported: not a race, but still a round
					}
					return s.removeB(mode)
				})
			if isClosed(reused) {
				aligned++
			}
		}
		t.round(n, label, s.judgeAddVsRemove("pull", add, rem))
	}
	c.Logf("%s\n%d rounds aligned on \"Already exists\"; %s", t, aligned, time.Since(start))
	s.assertEmptyStore(c, "pull vs remove")
	c.Check(aligned > 0, check.Equals, true, check.Commentf("no pull of A reported a layer of B as \"Already exists\": the rounds did not overlap"))
	c.Assert(t.lost, check.Equals, 0, check.Commentf("%s", t))
}

// TestLoadVsRemoveSharedLayers: as TestPullVsRemoveSharedLayers, with A
// loaded from its docker-save archive (POST /images/load) instead of pulled.
func (s *StoreRaceSuite) TestLoadVsRemoveSharedLayers(c *check.C) {
	archive := s.saveA(c)
	// Without concurrency the sequence works: what fails below is the race.
	s.reset(c)
	s.putB(c, removeRmi)
	add := s.load(archive)
	rem := s.removeB(removeRmi)
	c.Assert(s.judgeAddVsRemove("load", add, rem), check.HasLen, 0, check.Commentf("sequential load A, rmi B"))

	t := newRaceTally("load A vs rmi/prune B")
	start := time.Now()
	for n := 0; n < raceLoadRounds; n++ {
		mode := raceRemoveMode(n % int(raceRemoveModes))
		s.reset(c)
		s.putB(c, mode)
		add, rem := race(func() raceOp { return s.load(archive) }, func() raceOp { return s.removeB(mode) })
		t.round(n, mode.String(), s.judgeAddVsRemove("load", add, rem))
	}
	c.Logf("%s in %s", t, time.Since(start))
	s.assertEmptyStore(c, "load vs remove")
	c.Assert(t.lost, check.Equals, 0, check.Commentf("%s", t))
}

// TestFailingLoadVsValidLoadSameBlobs: each round starts with no image and
// (once orphans are reclaimed) no blob; a valid archive of A and a corrupt one carrying the same layer
// blobs (wrong DiffID in its config) are loaded at once. The valid load must
// succeed with all of A's blobs on disk, the corrupt one must fail, and the
// store check must find nothing. At the end, with every image removed and
// pruned, blobs/sha256 is empty and the check counts no unreferenced blob.
func (s *StoreRaceSuite) TestFailingLoadVsValidLoadSameBlobs(c *check.C) {
	valid := s.saveA(c)
	bad := corruptArchive(c, valid)
	// Without concurrency: the corrupt archive fails on the DiffID and the
	// valid one loads.
	s.reset(c)
	op := s.load(bad)
	c.Assert(isDiffIDError(op.err), check.Equals, true, check.Commentf("sequential corrupt load: %q", op.err))
	op = s.load(valid)
	c.Assert(op.err, check.Equals, "", check.Commentf("sequential valid load after the corrupt one"))
	c.Assert(s.missingBlobs(raceBlobsOf(s.a)), check.HasLen, 0)

	t := newRaceTally("valid load vs failing load of the same blobs")
	start := time.Now()
	for n := 0; n < raceBadLoadRounds; n++ {
		s.reset(c)
		c.Assert(s.present(c, s.a.ID()), check.Equals, false)
		fails := map[string]string{}
		// Both loads must find the blobs absent, so that each writes them.
		if left := s.blobsOnDisk(c); len(left) > 0 {
			fails["blobs left after the reset"] = strings.Join(left, " ")
		}
		good, failing := race(func() raceOp { return s.load(valid) }, func() raceOp { return s.load(bad) })
		if good.err != "" {
			fails["valid load failed"] = good.err
		}
		if failing.err == "" {
			fails["corrupt load succeeded"] = string(failing.body)
		} else if !isDiffIDError(failing.err) {
			fails["corrupt load failed for another reason"] = failing.err
		}
		s.checkStore(fails)
		t.round(n, "valid+corrupt", fails)
	}
	c.Logf("%s in %s", t, time.Since(start))
	s.assertEmptyStore(c, "failing vs valid load")
	c.Assert(t.lost, check.Equals, 0, check.Commentf("%s", t))
}

// checkStore adds to fails what a round may not leave behind: a missing blob
// of A, or any problem the store check finds.
func (s *StoreRaceSuite) checkStore(fails map[string]string) {
	if miss := s.missingBlobs(raceBlobsOf(s.a)); len(miss) > 0 {
		fails["A's blobs missing"] = strings.Join(miss, " ")
	}
	rep, err := s.storeCheck()
	switch {
	case err != nil:
		fails["system check"] = err.Error()
	case len(rep.Problems) > 0:
		fails["system check problems"] = problemsString(rep)
	}
}

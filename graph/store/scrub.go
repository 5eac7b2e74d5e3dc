package store

// The background scrub: the walk of blobs/ for orphans (blobs no record
// uses, left by a crash) and the quick check (every image's blobs present
// with their sizes) take ~6 s at 50,000 images (BOLT.md), too long to hold
// the API's first answer. Open does neither; the daemon calls StartScrub
// once the API answers, and the scrub does both in the background:
//
//  1. the orphan collection, under the same rules as every collection
//     (leaseMu; a blob a live lease pins, or being ingested, is never
//     taken; lease.go), orphans moving into partial/ as they did at
//     start-up;
//  2. the quick check (check.go), reported as start-up's was: logged, and
//     /info warnings when it finds problems (the daemon's part).
//
// Its report is kept and shown by `wharf system check` (CheckReport's
// LastScrub). A check waits for a scrub under way, so what it reports of
// the store, and of the scrub, is after the scrub.

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

// ScrubReport is what the last scrub did and found.
type ScrubReport = types.ScrubReport

// StartScrub starts the scrub in the background and returns at once;
// done, when not nil, is called with its report when it ends, before a
// check waiting for it goes on. A scrub
// already under way, or a closed store, starts nothing (done is not
// called). Close stops a scrub under way.
func (s *Store) StartScrub(done func(*ScrubReport)) { s.scrubber.Start(s.scrub1, done) }

// Scrub runs the scrub now, keeps its report as the last one, and returns
// it (StartScrub runs it in the background; tests call it directly).
func (s *Store) Scrub(ctx context.Context) *ScrubReport { return s.scrubber.Run(ctx, s.scrub1) }

func (s *Store) scrub1(ctx context.Context) *ScrubReport {
	rep := &ScrubReport{Started: time.Now(), Collected: []string{}, Problems: []CheckProblem{}}
	got, freed, err := s.collectAll(ctx, true)
	for _, o := range got {
		rep.CollectedBlobs++
		rep.CollectedBytes += o.Size
		if len(rep.Collected) < types.MaxScrubListed {
			rep.Collected = append(rep.Collected, o.Digest.String())
		}
	}
	if err != nil {
		rep.Error = "collect unreferenced blobs: " + err.Error()
		return rep
	}
	if len(got) > 0 {
		s.log.WithFields(logrus.Fields{"blobs": len(got), "bytes": freed}).Info("unreferenced blobs left by an earlier run moved to the partial downloads")
	}
	crep, err := s.check(ctx, false)
	if err != nil {
		rep.Error = "quick check: " + err.Error()
		return rep
	}
	rep.Images, rep.Blobs, rep.ProblemCount = crep.Images, crep.Blobs, len(crep.Problems)
	if len(crep.Problems) > types.MaxScrubListed {
		crep.Problems = crep.Problems[:types.MaxScrubListed]
	}
	rep.Problems = append(rep.Problems, crep.Problems...)
	return rep
}

// LastScrub is a copy of the last finished scrub's report; nil when none
// has finished.
func (s *Store) LastScrub() *ScrubReport { return s.scrubber.Last() }

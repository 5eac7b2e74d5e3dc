package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/server"
	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph"
)

// storeChecker is the store check of graph.Service (see imageService).
type storeChecker interface {
	Check(ctx context.Context, full bool) (*graph.CheckReport, error)
}

// SystemCheck implements server.SystemBackend (GET /wharf/system/check).
func (d *Daemon) SystemCheck(ctx context.Context, full bool) (*server.CheckReport, error) {
	rep, err := d.images.Check(ctx, full)
	if err != nil {
		return nil, err
	}
	return toServerReport(rep), nil
}

func toServerReport(rep *graph.CheckReport) *server.CheckReport {
	out := *rep
	if out.Problems == nil {
		out.Problems = []server.CheckProblem{}
	}
	return &out
}

// maxStartupProblemsLogged bounds the start-up log: a store with thousands
// of missing blobs is one message plus a pointer to `wharf system check`.
const maxStartupProblemsLogged = 20

// scrubber is the store's background scrub (graph/store scrub.go): the
// orphan collection and the quick check, run once the API answers.
type scrubber interface {
	StartScrub(done func(*types.ScrubReport))
}

// startScrub starts the store's scrub; when it ends, its findings are
// logged and become /info warnings. The daemon serves meanwhile: the
// images that are intact are usable, and a pull of a damaged one repairs
// it.
func (d *Daemon) startScrub(sc scrubber, log *logrus.Entry) {
	sc.StartScrub(func(rep *types.ScrubReport) {
		w := scrubWarnings(rep, log)
		d.scrubWarnings.Store(&w)
	})
}

// scrubWarnings logs what the scrub found, as the start-up check did, and
// returns the /info warnings it calls for.
func scrubWarnings(rep *types.ScrubReport, log *logrus.Entry) []string {
	if rep.Error != "" {
		log.WithField("error", rep.Error).Warn("start-up store check failed")
		return []string{"WARNING: start-up store check failed: " + rep.Error}
	}
	took := rep.Finished.Sub(rep.Started).Round(time.Millisecond)
	if rep.ProblemCount == 0 {
		log.WithFields(logrus.Fields{"images": rep.Images, "blobs": rep.Blobs, "took": took}).Info("start-up store check: no problems")
		return nil
	}
	for i, p := range rep.Problems {
		if i == maxStartupProblemsLogged {
			break
		}
		log.WithField("kind", p.Kind).Error("start-up store check: " + p.Message)
	}
	if rep.ProblemCount > maxStartupProblemsLogged {
		log.Errorf("start-up store check: %d more problems not shown", rep.ProblemCount-maxStartupProblemsLogged)
	}
	return []string{fmt.Sprintf("WARNING: the image store has %d problem(s); run `wharf system check` for the list", rep.ProblemCount)}
}

package daemon

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/server"
	"github.com/wharfproject/wharf/graph"
)

// storeChecker is the store check of graph.Store (see imageStore).
type storeChecker interface {
	Check(ctx context.Context, full bool) (*graph.CheckReport, error)
}

// SystemCheck implements server.SystemBackend (GET /wharf/system/check).
func (d *Daemon) SystemCheck(ctx context.Context, full bool) (*server.CheckReport, error) {
	rep, err := d.imageStore.Check(ctx, full)
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

// startupCheck runs the cheap store check (existence and sizes, no hashing)
// and logs what it finds; problems also become /info warnings. The daemon
// starts anyway: the images that are intact stay usable, and a pull of a
// damaged one repairs it.
func startupCheck(ctx context.Context, sc storeChecker, log *logrus.Entry) []string {
	rep, err := sc.Check(ctx, false)
	if err != nil {
		log.WithError(err).Warn("start-up store check failed")
		return []string{"WARNING: start-up store check failed: " + err.Error()}
	}
	if len(rep.Problems) == 0 {
		log.WithFields(logrus.Fields{"images": rep.Images, "blobs": rep.Blobs}).Info("start-up store check: no problems")
		return nil
	}
	for i, p := range rep.Problems {
		if i == maxStartupProblemsLogged {
			log.Errorf("start-up store check: %d more problems not shown", len(rep.Problems)-i)
			break
		}
		log.WithField("kind", p.Kind).Error("start-up store check: " + p.Message)
	}
	return []string{fmt.Sprintf("WARNING: the image store has %d problem(s); run `wharf system check` for the list", len(rep.Problems))}
}

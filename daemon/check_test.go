package daemon

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph"
)

// fakeScrubber's scrub ends at once with rep.
type fakeScrubber struct{ rep *types.ScrubReport }

func (f fakeScrubber) StartScrub(done func(*types.ScrubReport)) { done(f.rep) }

func TestScrubLogsProblemsAndWarns(t *testing.T) {
	var problems []graph.CheckProblem
	for i := 0; i < 25; i++ {
		problems = append(problems, graph.CheckProblem{Kind: "missing-blob", Message: fmt.Sprintf("problem %d", i)})
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		rep      *types.ScrubReport
		warnings []string
		logHas   []string
		logLacks []string
	}{
		{&types.ScrubReport{Started: at, Finished: at.Add(time.Second), Images: 3, Blobs: 9}, nil, []string{"no problems", "took=1s"}, nil},
		{&types.ScrubReport{Problems: problems[:25], ProblemCount: 30}, []string{"the image store has 30 problem(s)"},
			[]string{"problem 0", "problem 19", "10 more problems not shown"}, []string{"problem 20"}},
		{&types.ScrubReport{Error: "disk on fire"}, []string{"disk on fire"}, []string{"disk on fire"}, nil},
	} {
		var buf bytes.Buffer
		l := logrus.New()
		l.SetOutput(&buf)
		d := &Daemon{warnings: []string{"from the configuration"}}
		d.startScrub(fakeScrubber{tc.rep}, logrus.NewEntry(l))
		w := d.allWarnings()
		if len(w) != 1+len(tc.warnings) || w[0] != "from the configuration" {
			t.Errorf("warnings %q", w)
		}
		for i, want := range tc.warnings {
			if !strings.Contains(w[1+i], want) {
				t.Errorf("warning %q lacks %q", w[1+i], want)
			}
		}
		for _, s := range tc.logHas {
			if !strings.Contains(buf.String(), s) {
				t.Errorf("log lacks %q:\n%s", s, buf.String())
			}
		}
		for _, s := range tc.logLacks {
			if strings.Contains(buf.String(), s) {
				t.Errorf("log has %q", s)
			}
		}
	}
}

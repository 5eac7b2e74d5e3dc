package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/graph"
)

type fakeChecker struct {
	rep *graph.CheckReport
	err error
}

func (f fakeChecker) Check(_ context.Context, full bool) (*graph.CheckReport, error) {
	if full {
		return nil, errors.New("start-up must not hash")
	}
	return f.rep, f.err
}

func TestStartupCheckLogsProblemsAndWarns(t *testing.T) {
	var problems []graph.CheckProblem
	for i := 0; i < 25; i++ {
		problems = append(problems, graph.CheckProblem{Kind: "missing-blob", Message: fmt.Sprintf("problem %d", i)})
	}
	for _, tc := range []struct {
		f        fakeChecker
		warnings int
		logHas   []string
		logLacks []string
	}{
		{fakeChecker{rep: &graph.CheckReport{Images: 3, Blobs: 9, Problems: []graph.CheckProblem{}}}, 0, []string{"no problems"}, nil},
		{fakeChecker{rep: &graph.CheckReport{Problems: problems}}, 1, []string{"problem 0", "problem 19", "5 more problems not shown"}, []string{"problem 20"}},
		{fakeChecker{err: errors.New("disk on fire")}, 1, []string{"disk on fire"}, nil},
	} {
		var buf bytes.Buffer
		l := logrus.New()
		l.SetOutput(&buf)
		w := startupCheck(context.Background(), tc.f, logrus.NewEntry(l))
		if len(w) != tc.warnings {
			t.Errorf("warnings %q", w)
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

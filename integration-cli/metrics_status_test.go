package integration

import (
	"net/http"
	"regexp"
	"sort"
	"sync/atomic"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/hostile"
)

// oddStatuses are 40 statuses wharf does not act on, from every class and
// beyond (net/http serves 100–999): what a registry may send to choose the
// status label's values.
var oddStatuses = []int{
	203, 207, 226, 299,
	300, 304, 305, 306, 350, 399,
	402, 406, 409, 410, 411, 412, 413, 414, 415, 417, 418, 421, 422, 423, 424, 425, 426, 428, 431, 451, 460, 480, 499,
	505, 507, 511, 599,
	600, 700, 999,
}

// TestRegistryStatusLabelIsBounded (issue 20, red team finding 5): the
// status label of wharf_registry_requests_total was whatever code the
// registry sent, so 40 inspects of a registry answering 40 odd codes made
// over 40 series for one host. Now a code wharf does not act on is its
// class ("2xx" … "5xx", "other" beyond 599): docs/security.md promises no
// label takes a value someone else chooses.
func (s *MetricsSuite) TestRegistryStatusLabelIsBounded(c *check.C) {
	var status atomic.Int32
	reg, err := hostile.Start(hostile.Options{Fault: func(w http.ResponseWriter, r *http.Request, req hostile.Request) bool {
		if req.Kind != hostile.KindManifest {
			return false
		}
		w.Header().Set("Retry-After", "0") // the 5xx and beyond are retried: at once
		hostile.WriteError(w, int(status.Load()), "ODD", "odd status")
		return true
	}})
	c.Assert(err, check.IsNil)
	defer reg.Close()
	c.Assert(oddStatuses, check.HasLen, 40)
	name := reg.Host + "/" + reg.Repo + ":" + reg.Tag
	for _, code := range oddStatuses {
		status.Store(int32(code))
		r := s.d.Get(c, "/v1.50/images/"+name+"/json?remote=1")
		c.Assert(r.Status, check.Not(check.Equals), http.StatusOK, check.Commentf("status %d: %s", code, r))
	}

	fam := s.scrape(c)["wharf_registry_requests_total"]
	c.Assert(fam, check.NotNil)
	series, statuses := 0, map[string]bool{}
	for _, m := range fam.Metric {
		labels := map[string]string{}
		for _, lp := range m.Label {
			labels[lp.GetName()] = lp.GetValue()
		}
		if labels["host"] != reg.Host {
			continue
		}
		series++
		statuses[labels["status"]] = true
	}
	var seen []string
	for st := range statuses {
		seen = append(seen, st)
	}
	sort.Strings(seen)
	c.Logf("%d series, status values %v for %d odd statuses", series, seen, len(oddStatuses))
	// The ping's 200 and the classes 2xx, 3xx, 4xx, 5xx, other.
	c.Check(len(statuses) <= 6, check.Equals, true, check.Commentf("status values %v", seen))
	var chosen []string
	for _, st := range seen {
		if !regexp.MustCompile(`^(200|[2-5]xx|other)$`).MatchString(st) {
			chosen = append(chosen, st)
		}
	}
	c.Check(chosen, check.HasLen, 0, check.Commentf("status values the registry chose: %v", chosen))
	// host × method (HEAD, GET) × status × outcome (ok, http_error).
	c.Check(series <= 2*6*2, check.Equals, true, check.Commentf("%d series", series))
}

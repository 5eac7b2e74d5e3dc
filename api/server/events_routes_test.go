package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/types"
)

func ev(action events.Action, id string, t int64) types.EventMessage {
	return types.EventMessage{Message: events.Message{
		Type: events.ImageEventType, Action: action, Scope: "local",
		Actor: events.Actor{ID: id, Attributes: map[string]string{"name": id}},
		Time:  t, TimeNano: t * 1e9,
	}}
}

func TestEventsPastOnly(t *testing.T) {
	var gotSince, gotUntil time.Time
	var gotFilters types.Filters
	cancelled := false
	b := &fakeBackend{subscribe: func(since, until time.Time, f types.Filters) ([]types.EventMessage, <-chan types.EventMessage, func()) {
		gotSince, gotUntil, gotFilters = since, until, f
		return []types.EventMessage{ev(events.ActionTag, "sha256:a", 100), ev(events.ActionCreate, "sha256:b", 101)}, nil, func() { cancelled = true }
	}}
	f := url.QueryEscape(`{"type":{"image":true}}`)
	rec := do(t, b, "GET", "/v1.41/events?since=100&until=200.5&filters="+f, nil, nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v", rec.Code, rec.Header())
	}
	if gotSince.Unix() != 100 || gotUntil.UnixNano() != 200_500_000_000 || !gotFilters["type"]["image"] || !cancelled {
		t.Errorf("since %v until %v filters %v cancelled %v", gotSince, gotUntil, gotFilters, cancelled)
	}
	lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
	// API 1.41 < 1.46: image create events are not shown.
	if len(lines) != 1 {
		t.Fatalf("lines %q", lines)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	if m["status"] != "tag" || m["id"] != "sha256:a" || m["Action"] != "tag" || m["scope"] != "local" || m["timeNano"] != float64(100e9) {
		t.Errorf("event %v", m)
	}
	rec = do(t, b, "GET", "/v1.50/events?since=100&until=200", nil, nil)
	if n := strings.Count(rec.Body.String(), "\n"); n != 2 {
		t.Errorf("1.50 should show create events: %q", rec.Body)
	}
}

func TestEventsBadQuery(t *testing.T) {
	tests := []struct {
		query, msg string
	}{
		{"since=200&until=100", "`since` time (200) cannot be after `until` time (100)"},
		{"since=abc", ""},
		{"filters=" + url.QueryEscape(`{"nope":{"x":true}}`), "Invalid filter 'nope'"},
	}
	for _, tc := range tests {
		rec := do(t, &fakeBackend{}, "GET", "/v1.41/events?"+tc.query, nil, nil)
		if rec.Code != 400 {
			t.Errorf("%s: %d", tc.query, rec.Code)
			continue
		}
		if tc.msg != "" && message(t, rec) != tc.msg {
			t.Errorf("%s: %q", tc.query, message(t, rec))
		}
	}
}

func TestEventsLiveEndsWhenChannelCloses(t *testing.T) {
	live := make(chan types.EventMessage, 2)
	live <- ev(events.ActionPull, "busybox:latest", time.Now().Unix())
	close(live) // the daemon shutting down
	b := &fakeBackend{subscribe: func(since, until time.Time, f types.Filters) ([]types.EventMessage, <-chan types.EventMessage, func()) {
		return nil, live, func() {}
	}}
	rec := do(t, b, "GET", "/v1.50/events", nil, nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"pull"`) {
		t.Errorf("%d %q", rec.Code, rec.Body)
	}
}

func TestEventsLiveEndsAtUntil(t *testing.T) {
	live := make(chan types.EventMessage) // never sends, never closes
	b := &fakeBackend{subscribe: func(since, until time.Time, f types.Filters) ([]types.EventMessage, <-chan types.EventMessage, func()) {
		return nil, live, func() {}
	}}
	until := time.Now().Add(50 * time.Millisecond)
	q := strconv.FormatInt(until.Unix(), 10) + "." + strconv.Itoa(until.Nanosecond())
	done := make(chan int)
	go func() { done <- do(t, b, "GET", "/v1.50/events?until="+q, nil, nil).Code }()
	select {
	case code := <-done:
		if code != 200 {
			t.Errorf("status %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("events stream did not end at until")
	}
}

func TestEventTimeParsing(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // unix nanos
		ok   bool
	}{
		{"", 0, true}, {"100", 100e9, true}, {"100.5", 100_500_000_000, true},
		{"100.000000001", 100_000_000_001, true}, {"x", 0, false}, {"1.x", 0, false},
	}
	for _, tc := range tests {
		got, err := parseEventTime(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v", tc.in, err)
			continue
		}
		if tc.ok && tc.in != "" && got.UnixNano() != tc.want {
			t.Errorf("%q: %d, want %d", tc.in, got.UnixNano(), tc.want)
		}
	}
}

// A since or until beyond what int64 nanoseconds hold (after 2262-04-11,
// before 1677-09-21) reaches the backend clamped, so no comparison in
// nanoseconds wraps around; the order check still sees the real dates.
func TestEventTimesBeyondNanosecondRangeAreClamped(t *testing.T) {
	const y2300, y2301 = "10413792000", "10445328000"
	var gotSince, gotUntil time.Time
	live := make(chan types.EventMessage, 2)
	b := &fakeBackend{subscribe: func(since, until time.Time, f types.Filters) ([]types.EventMessage, <-chan types.EventMessage, func()) {
		gotSince, gotUntil = since, until
		return nil, live, func() {}
	}}
	tests := []struct {
		query                string
		wantSince, wantUntil int64 // UnixNano; 0 = no bound
	}{
		{"since=" + y2300, math.MaxInt64, 0},
		{"since=-20000000000&until=100", math.MinInt64, 100e9},
		{"since=100&until=-1", 0, 0}, // until before since: 400 below
	}
	for _, tc := range tests[:2] {
		live <- ev(events.ActionTag, "sha256:a", time.Now().Unix())
		close(live)
		rec := do(t, b, "GET", "/v1.50/events?"+tc.query, nil, nil)
		live = make(chan types.EventMessage, 2)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", tc.query, rec.Code, rec.Body)
		}
		if gotSince.UnixNano() != tc.wantSince || (tc.wantUntil != 0 && gotUntil.UnixNano() != tc.wantUntil) {
			t.Errorf("%s: since %d until %d", tc.query, gotSince.UnixNano(), gotUntil.UnixNano())
		}
	}
	if rec := do(t, b, "GET", "/v1.50/events?"+tests[2].query, nil, nil); rec.Code != 400 {
		t.Errorf("until before since: %d", rec.Code)
	}
	if rec := do(t, b, "GET", "/v1.50/events?since="+y2301+"&until="+y2300, nil, nil); rec.Code != 400 {
		t.Errorf("since 2301 after until 2300 must stay an error once both are clamped: %d", rec.Code)
	}

	// A live stream with until in 2300 does not end at its first event.
	live = make(chan types.EventMessage, 3)
	now := time.Now().Unix()
	live <- ev(events.ActionTag, "sha256:1", now)
	live <- ev(events.ActionTag, "sha256:2", now)
	close(live)
	rec := do(t, b, "GET", "/v1.50/events?until="+y2300, nil, nil)
	if n := strings.Count(rec.Body.String(), "\n"); rec.Code != 200 || n != 2 {
		t.Errorf("until 2300: %d, %d events: %s", rec.Code, n, rec.Body)
	}
	if gotUntil.UnixNano() != math.MaxInt64 {
		t.Errorf("until reached the backend as %d", gotUntil.UnixNano())
	}
}

func FuzzParseEventTime(f *testing.F) {
	for _, s := range []string{"", "1", "1.5", "-1", "1.", ".1", "99999999999999999999", "1.1234567891234"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { _, _ = parseEventTime(s) })
}

func FuzzParsePlatformString(f *testing.F) {
	for _, s := range []string{"linux", "linux/amd64", "linux/arm64/v8", "Linux/X86_64", "//", "a/b/c/d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePlatformString(s)
		if err == nil && p.OS == "" {
			t.Errorf("%q: empty OS accepted", s)
		}
	})
}

func TestRequestLogNeverHoldsCredentials(t *testing.T) {
	var buf bytes.Buffer
	logger := logrus.New()
	logger.SetOutput(&buf)
	logger.SetLevel(logrus.DebugLevel)
	b := &fakeBackend{}
	h := New(b, Options{Logger: logrus.NewEntry(logger)})
	secret := "hunter2-secret"
	auth := base64.URLEncoding.EncodeToString([]byte(`{"username":"u","password":"` + secret + `"}`))
	r := httptest.NewRequest("POST", "/v1.50/auth", strings.NewReader(`{"username":"u","password":"`+secret+`"}`))
	h.ServeHTTP(httptest.NewRecorder(), r)
	r = httptest.NewRequest("POST", "/v1.50/images/create?fromImage=x", nil)
	r.Header.Set("X-Registry-Auth", auth)
	h.ServeHTTP(httptest.NewRecorder(), r)
	out := buf.String()
	if !strings.Contains(out, "path=/v1.50/auth") || !strings.Contains(out, "status=501") {
		t.Fatalf("request log missing: %s", out)
	}
	if strings.Contains(out, secret) || strings.Contains(out, auth) {
		t.Errorf("credential in log: %s", out)
	}
}

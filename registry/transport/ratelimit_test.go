package transport

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRateLimitValue(t *testing.T) {
	for _, tc := range []struct {
		in     string
		n      int64
		window time.Duration
		ok     bool
	}{
		{"100;w=21600", 100, 6 * time.Hour, true}, // Docker Hub
		{"76;w=21600", 76, 6 * time.Hour, true},
		{"0;w=21600", 0, 6 * time.Hour, true},
		{"100", 100, 0, true},
		{" 100 ; w = 60 ", 100, time.Minute, true},
		{`100;w="60"`, 100, time.Minute, true},
		{"100;W=60", 100, time.Minute, true},
		{"100;comment=\"x\";w=60", 100, time.Minute, true},
		{"10, 10;w=1, 1000;w=3600", 10, time.Second, true}, // the draft's policy list
		{"10, 1000;w=3600", 10, 0, true},
		{"99999999999999999999999", maxRateLimitCount, 0, true},
		{"5;w=99999999999999", 5, maxRateLimitWindow, true},
		{"", 0, 0, false},
		{"-1", 0, 0, false},
		{"1e3", 0, 0, false},
		{"+5", 0, 0, false},
		{"100;w=", 0, 0, false},
		{"100;w=-5", 0, 0, false},
		{"abc;w=60", 0, 0, false},
		{strings.Repeat("1", maxRateLimitHeader+1), 0, 0, false},
	} {
		n, w, ok := parseRateLimitValue(tc.in)
		if n != tc.n || w != tc.window || ok != tc.ok {
			t.Errorf("%q: %d %v %v, want %d %v %v", tc.in, n, w, ok, tc.n, tc.window, tc.ok)
		}
	}
}

func TestRateLimitOf(t *testing.T) {
	h := http.Header{}
	if _, ok := rateLimitOf(h); ok {
		t.Error("no headers: a rate limit")
	}
	h.Set("RateLimit-Limit", "100;w=21600")
	if _, ok := rateLimitOf(h); ok {
		t.Error("no Remaining: a rate limit")
	}
	h.Set("RateLimit-Remaining", "76")
	rl, ok := rateLimitOf(h)
	if !ok || rl.Limit != 100 || rl.Remaining != 76 || rl.Window != 6*time.Hour {
		t.Errorf("%+v %v, want 100, 76, 6h (the window from Limit)", rl, ok)
	}
}

// The states are bounded: beyond maxRateLimitKeys the least recently seen
// host and identity is dropped.
func TestRateLimitsAreBounded(t *testing.T) {
	r := newRateLimits()
	resp := &http.Response{Header: http.Header{"Ratelimit-Remaining": {"1"}}}
	for i := 0; i < maxRateLimitKeys+10; i++ {
		r.observe("h", strings.Repeat("x", i), resp)
	}
	if n := r.state.Len(); n != maxRateLimitKeys {
		t.Errorf("%d states, want %d", n, maxRateLimitKeys)
	}
	if got := r.latest(); len(got) != 1 || got[0].Host != "h" {
		t.Errorf("latest %+v, want one for h", got)
	}
}

// FuzzParseRateLimitValue: any header value parses without panic into a
// count and window within their caps; what parses is digits first.
func FuzzParseRateLimitValue(f *testing.F) {
	for _, s := range []string{"100;w=21600", "76;w=21600", "10, 10;w=1, 1000;w=3600", `5;w="6"`, "1;w=1;w=2", ";", ",", "9;w=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, w, ok := parseRateLimitValue(s)
		if !ok {
			if n != 0 || w != 0 {
				t.Fatalf("%q: not ok but %d %v", s, n, w)
			}
			return
		}
		if n < 0 || n > maxRateLimitCount || w < 0 || w > maxRateLimitWindow {
			t.Fatalf("%q: %d %v beyond the caps", s, n, w)
		}
		if len(s) > maxRateLimitHeader {
			t.Fatalf("%q: parsed beyond %d bytes", s, maxRateLimitHeader)
		}
	})
}

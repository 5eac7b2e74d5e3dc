package blobs

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Where a blob's store redirects are remembered. A registry that keeps its
// blobs in an object store answers a blob GET with 307/302 to a signed URL;
// the next range read of that blob goes straight there while the URL is
// valid, saving the registry's round trip (and its rate limit) per read.
//
// The key is the endpoint, the repository AND the credential identity
// (LocationKey): a signed URL is a capability, so it is handed only to a
// caller whose own credentials were sent for it.
const (
	// MaxLocations bounds the memory: a contents session reads the layers
	// of a few images (50 images of 10 layers fit); an evicted entry costs
	// one redirect more, nothing else.
	MaxLocations = 512
	// MaxLocationURL: a longer URL is not remembered. Signed URLs of S3,
	// GCS, Azure and CDNs are 0.5–2 KiB; with MaxLocations it bounds the
	// memory at 2 MiB.
	MaxLocationURL = 4 << 10
	// DefaultLocationTTL is kept when neither the URL nor the redirect
	// says how long it is valid: a minute covers the reads of one ls or
	// cat, and is short enough that a URL whose validity we cannot see is
	// not trusted for long (a 4xx from it sends the read back through the
	// registry anyway).
	DefaultLocationTTL = time.Minute
	// MaxLocationTTL caps what a URL claims (S3 allows 7 days): access
	// revoked at the registry stops reaching the store within 15 minutes.
	MaxLocationTTL = 15 * time.Minute
	// locationMargin is taken off the expiry: a request sent just before
	// it would arrive after it.
	locationMargin = 10 * time.Second
)

// Locations remembers blob store URLs until they expire; safe for
// concurrent use.
type Locations struct {
	now     func() time.Time
	observe func(hit bool) // each look-up of a range read (metrics); nil: none

	mu  sync.Mutex
	lru *simplelru.LRU[string, location]
}

type location struct {
	u       *url.URL
	expires time.Time
}

// NewLocations remembers up to n URLs (MaxLocations when n <= 0).
func NewLocations(n int) *Locations {
	if n <= 0 {
		n = MaxLocations
	}
	l, _ := simplelru.NewLRU[string, location](n, nil) // n > 0: no error
	return &Locations{now: time.Now, lru: l}
}

// SetObserver has each look-up of a range read reported (the registry
// metrics' blob_location cache).
func (l *Locations) SetObserver(fn func(hit bool)) { l.observe = fn }

// SetClock replaces time.Now (tests).
func (l *Locations) SetClock(now func() time.Time) { l.now = now }

// Len is the number of URLs remembered (tests, metrics).
func (l *Locations) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}

func (l *Locations) get(key string) (*url.URL, bool) {
	u, ok := l.lookup(key)
	if l.observe != nil {
		l.observe(ok)
	}
	return u, ok
}

func (l *Locations) lookup(key string) (*url.URL, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	loc, ok := l.lru.Get(key)
	if !ok {
		return nil, false
	}
	if !l.now().Before(loc.expires) {
		l.lru.Remove(key)
		return nil, false
	}
	u := *loc.u
	return &u, true
}

// remember keeps u, the target of redirect, under key.
func (l *Locations) remember(key string, u *url.URL, redirect http.Header) {
	if u == nil || len(u.String()) > MaxLocationURL {
		return
	}
	now := l.now()
	exp, ok := locationExpiry(u.Query(), redirect, now)
	if !ok {
		return
	}
	if exp.After(now.Add(MaxLocationTTL)) {
		exp = now.Add(MaxLocationTTL)
	}
	exp = exp.Add(-locationMargin)
	if !exp.After(now) {
		return
	}
	c := *u
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lru.Add(key, location{u: &c, expires: exp})
}

func (l *Locations) drop(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lru.Remove(key)
}

// locationExpiry is when a signed URL stops being valid: the earliest of
// what its query says (S3's X-Amz-Date + X-Amz-Expires, GCS's X-Goog-Date
// + X-Goog-Expires, CloudFront's and GCS v2's Expires in Unix seconds,
// Azure's se) and the redirect's Cache-Control max-age; now +
// DefaultLocationTTL when none says. ok is false when it must not be kept
// at all (Cache-Control no-store or no-cache, a malformed expiry).
func locationExpiry(q url.Values, redirect http.Header, now time.Time) (time.Time, bool) {
	var exp time.Time
	known := false
	earliest := func(t time.Time) {
		if !known || t.Before(exp) {
			exp, known = t, true
		}
	}
	bad := false
	signed := func(dateKey, expKey string) {
		s := q.Get(expKey)
		if s == "" {
			return
		}
		secs, ok := seconds(s)
		if !ok {
			bad = true
			return
		}
		from := now
		if d := q.Get(dateKey); d != "" {
			t, err := time.Parse("20060102T150405Z", d)
			if err != nil {
				bad = true
				return
			}
			from = t
		}
		earliest(from.Add(clampSeconds(secs)))
	}
	signed("X-Amz-Date", "X-Amz-Expires")
	signed("X-Goog-Date", "X-Goog-Expires")
	if s := q.Get("Expires"); s != "" {
		secs, ok := seconds(s)
		if !ok {
			return time.Time{}, false
		}
		earliest(time.Unix(secs, 0))
	}
	if s := q.Get("se"); s != "" && q.Get("sig") != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}, false
		}
		earliest(t)
	}
	for _, v := range redirect.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			switch {
			case d == "no-store" || d == "no-cache":
				return time.Time{}, false
			case strings.HasPrefix(d, "max-age="):
				secs, ok := seconds(d[len("max-age="):])
				if !ok {
					return time.Time{}, false
				}
				earliest(now.Add(clampSeconds(secs)))
			}
		}
	}
	if bad {
		return time.Time{}, false
	}
	if !known {
		return now.Add(DefaultLocationTTL), true
	}
	return exp, true
}

// clampSeconds is secs as a duration of at most a day: anything longer is
// capped by MaxLocationTTL anyway, and the bound keeps time.Duration (whose
// range is 292 years) from overflowing.
func clampSeconds(secs int64) time.Duration {
	return time.Duration(min(secs, 24*3600)) * time.Second
}

// seconds parses a non-negative decimal count of seconds of at most 12
// digits (Unix time has 10).
func seconds(s string) (int64, bool) {
	if s == "" || len(s) > 12 || s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

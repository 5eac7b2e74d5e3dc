package transport

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// RateLimit is what a registry host last said of its rate limit to one
// credential identity: the RateLimit-Limit and RateLimit-Remaining headers
// in Docker Hub's form ("100;w=21600": 100 requests per 21,600 s), the
// early form of the IETF ratelimit-headers draft.
type RateLimit struct {
	Host      string        // host[:port] that sent the headers
	Limit     int64         // requests allowed per Window; 0 when not said
	Remaining int64         // requests left in the current window
	Window    time.Duration // the ";w=" window; 0 when not said
	Seen      time.Time     // when the answer carrying them arrived
}

// Bounds of what is kept from a registry's headers: every number is
// capped and nothing else the registry wrote is stored.
const (
	// maxRateLimitHeader: Docker Hub's values are ~12 bytes; a list of a
	// few quota policies ("10, 10;w=1, 1000;w=3600") fits in 256.
	// Anything longer is not parsed at all.
	maxRateLimitHeader = 256
	// maxRateLimitCount caps Limit and Remaining: 2^40 requests is beyond
	// any registry's quota and far from int64 overflow.
	maxRateLimitCount = 1 << 40
	// maxRateLimitWindow caps the window: Docker Hub's is 6 h; a year is
	// no quota anyone enforces, and keeps the seconds → Duration
	// conversion from overflowing.
	maxRateLimitWindow = 366 * 24 * time.Hour
	// maxRateLimitKeys bounds the states kept, one per host and credential
	// identity, least recently seen dropped first: as many as the hosts a
	// Stack sets up (maxRememberedHosts), ~100 bytes each, ~100 KiB.
	maxRateLimitKeys = 1024
)

// parseRateLimitValue parses one RateLimit-Limit or RateLimit-Remaining
// value: the first item of the list, a non-negative integer with an
// optional ";w=SECONDS" parameter (other parameters, such as the draft's
// ";comment=", are ignored). When the first item has no window, the
// window of a later item with the same count is taken: the draft lists the
// effective limit first and its quota policies after it ("10, 10;w=1").
func parseRateLimitValue(v string) (n int64, window time.Duration, ok bool) {
	if len(v) > maxRateLimitHeader {
		return 0, 0, false
	}
	items := strings.Split(v, ",")
	n, window, ok = parseRateLimitItem(items[0])
	if !ok {
		return 0, 0, false
	}
	for _, it := range items[1:] {
		if window != 0 {
			break
		}
		if m, w, ok := parseRateLimitItem(it); ok && m == n {
			window = w
		}
	}
	return n, window, true
}

func parseRateLimitItem(item string) (n int64, window time.Duration, ok bool) {
	params := strings.Split(item, ";")
	n, ok = parseCount(params[0])
	if !ok {
		return 0, 0, false
	}
	for _, p := range params[1:] {
		k, val, found := strings.Cut(strings.TrimSpace(p), "=")
		if !found || !strings.EqualFold(strings.TrimSpace(k), "w") {
			continue
		}
		s, ok := parseCount(strings.Trim(strings.TrimSpace(val), `"`))
		if !ok {
			return 0, 0, false
		}
		window = min(time.Duration(min(s, int64(maxRateLimitWindow/time.Second)))*time.Second, maxRateLimitWindow)
	}
	return n, window, true
}

// parseCount is a non-negative decimal integer (digits only), capped at
// maxRateLimitCount.
func parseCount(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return maxRateLimitCount, true // all digits, beyond uint64: capped
	}
	return int64(min(n, maxRateLimitCount)), true
}

// rateLimitOf reads the headers of one answer; ok is false when it carries
// no (parsable) RateLimit-Remaining. Limit is optional.
func rateLimitOf(h http.Header) (RateLimit, bool) {
	rem, remW, ok := parseRateLimitValue(h.Get("RateLimit-Remaining"))
	if !ok {
		return RateLimit{}, false
	}
	lim, limW, _ := parseRateLimitValue(h.Get("RateLimit-Limit"))
	w := remW
	if w == 0 {
		w = limW
	}
	return RateLimit{Limit: lim, Remaining: rem, Window: w}, true
}

// rateLimits is the last RateLimit seen per host and credential identity.
type rateLimits struct {
	mu    sync.Mutex
	state *simplelru.LRU[rateKey, RateLimit]
}

type rateKey struct{ host, identity string }

func newRateLimits() *rateLimits {
	return &rateLimits{state: mustLRU[rateKey, RateLimit](maxRateLimitKeys)}
}

// observe records resp's rate limit, if it has one, for host and identity.
func (r *rateLimits) observe(host, identity string, resp *http.Response) {
	if resp == nil {
		return
	}
	rl, ok := rateLimitOf(resp.Header)
	if !ok {
		return
	}
	rl.Host, rl.Seen = host, time.Now()
	r.mu.Lock()
	r.state.Add(rateKey{host, identity}, rl)
	r.mu.Unlock()
}

func (r *rateLimits) get(host, identity string) (RateLimit, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Peek(rateKey{strings.ToLower(host), identity})
}

// latest is, per host, the rate limit seen last (whichever identity it
// was seen by), sorted by host.
func (r *rateLimits) latest() []RateLimit {
	r.mu.Lock()
	by := map[string]RateLimit{}
	for _, k := range r.state.Keys() {
		rl, _ := r.state.Peek(k)
		if old, ok := by[k.host]; !ok || rl.Seen.After(old.Seen) {
			by[k.host] = rl
		}
	}
	r.mu.Unlock()
	out := make([]RateLimit, 0, len(by))
	for _, rl := range by {
		out = append(out, rl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// The credential identity of a request travels in its context from
// Client.Do down to the retry layer, which records rate limits by it.
type identityKey struct{}

func withIdentity(ctx context.Context, identity string) context.Context {
	return context.WithValue(ctx, identityKey{}, identity)
}

func identityOf(ctx context.Context) string {
	s, _ := ctx.Value(identityKey{}).(string)
	return s
}

package blobs

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestLocationExpiry(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		query  string
		cache  string
		want   time.Duration // from now
		wantOK bool
	}{
		{name: "nothing: the default", want: DefaultLocationTTL, wantOK: true},
		{name: "s3", query: "X-Amz-Date=20260102T030405Z&X-Amz-Expires=1200", want: 20 * time.Minute, wantOK: true},
		{name: "s3 signed earlier", query: "X-Amz-Date=20260102T025405Z&X-Amz-Expires=1200", want: 10 * time.Minute, wantOK: true},
		{name: "s3 without date", query: "X-Amz-Expires=60", want: time.Minute, wantOK: true},
		{name: "gcs", query: "X-Goog-Date=20260102T030405Z&X-Goog-Expires=300", want: 5 * time.Minute, wantOK: true},
		{name: "unix Expires", query: "Expires=" + itoa(now.Unix()+90), want: 90 * time.Second, wantOK: true},
		{name: "azure se", query: "se=2026-01-02T03:09:05Z&sig=x", want: 5 * time.Minute, wantOK: true},
		{name: "azure se unsigned is not an expiry", query: "se=2026-01-02T03:09:05Z", want: DefaultLocationTTL, wantOK: true},
		{name: "max-age", cache: "public, max-age=30", want: 30 * time.Second, wantOK: true},
		{name: "earliest wins", query: "X-Amz-Expires=600", cache: "max-age=30", want: 30 * time.Second, wantOK: true},
		{name: "no-store", query: "X-Amz-Expires=600", cache: "no-store"},
		{name: "bad date", query: "X-Amz-Date=yesterday&X-Amz-Expires=600"},
		{name: "negative", query: "X-Amz-Expires=-5"},
		{name: "huge is clamped", query: "X-Amz-Expires=999999999999", want: 24 * time.Hour, wantOK: true},
		{name: "too many digits", query: "X-Amz-Expires=9999999999999"},
		{name: "bad max-age", cache: "max-age=soon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			h := http.Header{}
			if tc.cache != "" {
				h.Set("Cache-Control", tc.cache)
			}
			got, ok := locationExpiry(q, h, now)
			if ok != tc.wantOK || (ok && got.Sub(now) != tc.want) {
				t.Fatalf("got %v %v, want %v %v", got.Sub(now), ok, tc.want, tc.wantOK)
			}
		})
	}
}

func itoa(n int64) string { return formatInt(n) }

func formatInt(n int64) string {
	b := []byte{}
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// TestLocationsRemember: kept until the expiry less the margin, capped at
// MaxLocationTTL, bounded in number, too long a URL never kept.
func TestLocationsRemember(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	l := NewLocations(2)
	l.SetClock(func() time.Time { return now })
	u, _ := url.Parse("https://store.example/blob?X-Amz-Expires=604800")
	l.remember("a", u, nil)
	if _, ok := l.get("a"); !ok {
		t.Fatal("not remembered")
	}
	now = now.Add(MaxLocationTTL - locationMargin)
	if _, ok := l.get("a"); ok {
		t.Fatal("kept past MaxLocationTTL")
	}
	short, _ := url.Parse("https://store.example/blob?X-Amz-Expires=5")
	l.remember("b", short, nil)
	if _, ok := l.get("b"); ok {
		t.Fatal("kept a URL that expires within the margin")
	}
	long, _ := url.Parse("https://store.example/" + strings.Repeat("a", MaxLocationURL))
	l.remember("c", long, nil)
	if l.Len() != 0 {
		t.Fatalf("%d kept", l.Len())
	}
	for _, k := range []string{"1", "2", "3"} {
		l.remember(k, u, nil)
	}
	if _, ok := l.get("1"); ok || l.Len() != 2 {
		t.Fatalf("LRU of 2 holds %d, first kept %v", l.Len(), ok)
	}
}

func FuzzLocationExpiry(f *testing.F) {
	f.Add("X-Amz-Date=20260102T030405Z&X-Amz-Expires=1200", "max-age=30")
	f.Add("Expires=1767323045", "")
	f.Add("se=2026-01-02T03:09:05Z&sig=x", "no-store")
	f.Fuzz(func(t *testing.T, query, cache string) {
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		q, _ := url.ParseQuery(query)
		h := http.Header{"Cache-Control": {cache}}
		exp, ok := locationExpiry(q, h, now)
		if ok && exp.After(now.Add(25*time.Hour)) && q.Get("Expires") == "" && q.Get("se") == "" {
			t.Fatalf("relative expiry %v beyond the day's clamp", exp.Sub(now))
		}
	})
}

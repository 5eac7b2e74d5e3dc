package formatter

import (
	"strings"
	"time"

	units "github.com/docker/go-units"
)

// HumanSize renders bytes like docker's image tables: decimal units, three
// significant digits ("7.8MB", "1.23GB").
func HumanSize(n int64) string {
	return units.HumanSizeWithPrecision(float64(n), 3)
}

// Since renders how long ago t was, like docker's CREATED column
// ("2 hours ago", "About a minute ago").
func Since(t, now time.Time) string {
	if t.IsZero() || t.Unix() <= 0 {
		return "N/A"
	}
	return units.HumanDuration(now.Sub(t)) + " ago"
}

// ShortID is an image ID without "sha256:" and cut to 12 characters, as
// docker shows IDs unless --no-trunc.
func ShortID(id string) string {
	if i := strings.IndexByte(id, ':'); i >= 0 {
		id = id[i+1:]
	}
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// Ellipsis cuts s to n runes, ending with "…" when cut.
func Ellipsis(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "…"
}

// HumanBinary renders bytes in binary units, like docker info's "Total Memory".
func HumanBinary(n int64) string {
	return units.BytesSize(float64(n))
}

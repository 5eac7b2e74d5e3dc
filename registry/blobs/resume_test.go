package blobs

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in                 string
		first, last, total int64
		ok                 bool
	}{
		{"bytes 0-9/10", 0, 9, 10, true},
		{"bytes 3000000-7999999/8000000", 3000000, 7999999, 8000000, true},
		{"bytes 5-9/*", 5, 9, -1, true},
		{"bytes */10", 0, 0, 0, false},
		{"bytes 5-4/10", 0, 0, 0, false},
		{"bytes 0-10/10", 0, 0, 0, false},
		{"bytes -1-5/10", 0, 0, 0, false},
		{"bytes +1-5/10", 0, 0, 0, false},
		{"bytes 0-5", 0, 0, 0, false},
		{"items 0-5/10", 0, 0, 0, false},
		{"bytes 0-99999999999999999999/*", 0, 0, 0, false},
		{"", 0, 0, 0, false},
	} {
		f, l, tot, err := parseContentRange(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (f != tc.first || l != tc.last || tot != tc.total)) {
			t.Errorf("%q: %d %d %d %v", tc.in, f, l, tot, err)
		}
	}
}

func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-9/10", "bytes 5-9/*", "bytes */10", "bytes 9-5/10", "bytes 0-0/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		first, last, total, err := parseContentRange(s)
		if err != nil {
			if !strings.Contains(err.Error(), "Content-Range") {
				t.Fatalf("error does not name the header: %v", err)
			}
			return
		}
		if first < 0 || last < first || (total != -1 && last >= total) {
			t.Fatalf("%q: accepted %d-%d/%d", s, first, last, total)
		}
		if total != -1 {
			if want := fmt.Sprintf("bytes %d-%d/%d", first, last, total); len(s) < len(want) {
				t.Fatalf("%q parsed into longer %q", s, want)
			}
		}
	})
}

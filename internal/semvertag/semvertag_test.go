package semvertag

import (
	"reflect"
	"strings"
	"testing"
)

func TestSort(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string // space-separated
		want string
	}{
		{name: "numeric not lexical", in: "1.10.0 1.9.0 1.2.0", want: "1.2.0 1.9.0 1.10.0"},
		{name: "not versions first, lexically", in: "2.0 latest edge 1.0 sha256-abc.sig", want: "edge latest sha256-abc.sig 1.0 2.0"},
		{name: "partial versions", in: "3.20.1 3 3.19 3.20", want: "3 3.19 3.20 3.20.1"},
		{name: "equal precedence lexically", in: "3.0.0 3 3.0", want: "3 3.0 3.0.0"},
		{name: "leading v", in: "v2.0.0 1.5.0 v1.0.0", want: "v1.0.0 1.5.0 v2.0.0"},
		{name: "prerelease below release", in: "1.0.0 1.0.0-rc.1 1.0.0-alpha", want: "1.0.0-alpha 1.0.0-rc.1 1.0.0"},
		{name: "prerelease identifiers", in: "1.0.0-rc.10 1.0.0-rc.2 1.0.0-rc 1.0.0-beta.11 1.0.0-beta.2", want: "1.0.0-beta.2 1.0.0-beta.11 1.0.0-rc 1.0.0-rc.2 1.0.0-rc.10"},
		{name: "numeric identifiers below alphanumeric", in: "1.0.0-a 1.0.0-1", want: "1.0.0-1 1.0.0-a"},
		{name: "docker variants are prereleases", in: "1.25 1.25-alpine 1.24-alpine", want: "1.24-alpine 1.25-alpine 1.25"},
		{name: "build metadata ignored, then lexical", in: "1.0.0+b 1.0.0+a 1.0.0", want: "1.0.0 1.0.0+a 1.0.0+b"},
		{name: "leading zeros are not versions", in: "01.0 1.0", want: "01.0 1.0"},
		{name: "four parts are not versions", in: "1.2.3.4 1.2.3", want: "1.2.3.4 1.2.3"},
		{name: "huge numbers", in: "999999999999999999.0 2.0 1234567890123456789012.0", want: "1234567890123456789012.0 2.0 999999999999999999.0"},
		{name: "dates", in: "20240101 20231231", want: "20231231 20240101"},
		{name: "empty", in: "", want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tags := strings.Fields(tc.in)
			Sort(tags)
			if want := strings.Fields(tc.want); !reflect.DeepEqual(tags, want) && !(len(tags) == 0 && len(want) == 0) {
				t.Errorf("got %v, want %v", tags, want)
			}
		})
	}
}

func FuzzSort(f *testing.F) {
	f.Add("1.0.0 v2 latest 1.0.0-rc.1", "3.20-alpine")
	f.Fuzz(func(t *testing.T, a, b string) {
		tags := append(strings.Fields(a), strings.Fields(b)...)
		Sort(tags)
		// Sorting is stable under a second sort and keeps every tag.
		again := append([]string(nil), tags...)
		Sort(again)
		if !reflect.DeepEqual(tags, again) {
			t.Errorf("not idempotent: %v then %v", tags, again)
		}
	})
}

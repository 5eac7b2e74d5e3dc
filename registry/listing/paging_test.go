package listing

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestParseLinks(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []link
		err      bool
	}{
		{name: "empty", in: ""},
		{name: "distribution", in: `</v2/a/tags/list?last=b&n=2>; rel="next"`, want: []link{{target: "/v2/a/tags/list?last=b&n=2", next: true}}},
		{name: "unquoted rel", in: `</x>; rel=next`, want: []link{{target: "/x", next: true}}},
		{name: "rel list", in: `</x>; rel="prev next"`, want: []link{{target: "/x", next: true}}},
		{name: "rel case", in: `</x>; REL="Next"`, want: []link{{target: "/x", next: true}}},
		{name: "prev then next", in: `</p>; rel="prev", </n>; rel="next"`, want: []link{{target: "/p"}, {target: "/n", next: true}}},
		{name: "comma in quoted param", in: `</x>; title="a, b"; rel="next"`, want: []link{{target: "/x", next: true}}},
		{name: "comma in target", in: `</x?a=1,2>; rel="next"`, want: []link{{target: "/x?a=1,2", next: true}}},
		{name: "param without value", in: `</x>; foo; rel="next"`, want: []link{{target: "/x", next: true}}},
		{name: "no rel", in: `</x>`, want: []link{{target: "/x"}}},
		{name: "spaces", in: "  </x> ;  rel = \"next\"  ", want: []link{{target: "/x", next: true}}},
		{name: "no brackets", in: `/x; rel="next"`, err: true},
		{name: "unterminated target", in: `</x; rel="next"`, err: true},
		{name: "unterminated quote", in: `</x>; rel="next`, err: true},
		{name: "junk after target", in: `</x> rel="next"`, err: true},
		{name: "too many", in: strings.Repeat(`</x>; rel="prev", `, maxLinks+1), err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLinks(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if !tc.err && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNextLink(t *testing.T) {
	base, _ := url.Parse("http://reg.example:5000/v2/a/tags/list?n=2")
	for _, tc := range []struct {
		name   string
		values []string
		want   string
		err    string
	}{
		{name: "none"},
		{name: "relative", values: []string{`</v2/a/tags/list?last=b&n=2>; rel="next"`}, want: "http://reg.example:5000/v2/a/tags/list?last=b&n=2"},
		{name: "absolute same host", values: []string{`<http://reg.example:5000/v2/a/tags/list?last=c>; rel="next"`}, want: "http://reg.example:5000/v2/a/tags/list?last=c"},
		{name: "second header", values: []string{`</p>; rel="prev"`, `</n>; rel="next"`}, want: "http://reg.example:5000/n"},
		{name: "only prev", values: []string{`</p>; rel="prev"`}},
		{name: "other host", values: []string{`<http://evil.example/v2/a/tags/list>; rel="next"`}, err: "another registry"},
		{name: "other port", values: []string{`<http://reg.example:5001/x>; rel="next"`}, err: "another registry"},
		{name: "downgrade", values: []string{`<https://reg.example:5000/x>; rel="next"`}, err: "another registry"},
		{name: "malformed", values: []string{`next`}, err: "malformed"},
		{name: "bad url", values: []string{"<http://[::1>; rel=\"next\""}, err: "invalid Link target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nextLink(base, tc.values)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := ""
			if got != nil {
				s = got.String()
			}
			if s != tc.want {
				t.Errorf("got %q, want %q", s, tc.want)
			}
		})
	}
}

func FuzzParseLinks(f *testing.F) {
	for _, s := range []string{`</v2/a/tags/list?last=b&n=2>; rel="next"`, `</p>; rel="prev", </n>; rel=next`, `<x>; a="b,c"; rel`, `<`, `<>;`, `,,,`} {
		f.Add(s)
	}
	base, _ := url.Parse("https://reg.example/v2/a/tags/list")
	f.Fuzz(func(t *testing.T, s string) {
		links, err := parseLinks(s)
		if err != nil {
			return
		}
		if len(links) > maxLinks {
			t.Errorf("%d links", len(links))
		}
		u, err := nextLink(base, []string{s})
		if err == nil && u != nil && (u.Host != base.Host || u.Scheme != base.Scheme) {
			t.Errorf("next link %s leaves the registry", u)
		}
	})
}

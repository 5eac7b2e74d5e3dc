package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/wharfproject/wharf/registry/listing"
)

func TestTagsPagesLimitAndBadTags(t *testing.T) {
	ctx := context.Background()
	f := newFakeRegistry(t)
	var want []string
	for i := range 5 {
		tag := fmt.Sprintf("t%d", i)
		f.addImage("tags/app", tag, "linux", "amd64", "")
		want = append(want, tag)
	}
	f.tagsPerPage = 2
	s := testService(t, ServiceOptions{})
	r := mustRepo(t, s, f.host()+"/tags/app")
	countTags := func() (n int) {
		for _, q := range f.reset() {
			if strings.HasSuffix(q, "/tags/list") {
				n++
			}
		}
		return n
	}

	f.reset()
	tags, err := r.Tags(ctx, TagsOptions{})
	if err != nil || !reflect.DeepEqual(tags, want) {
		t.Fatalf("tags %v %v", tags, err)
	}
	if n := countTags(); n != 3 {
		t.Errorf("5 tags in pages of 2: %d requests", n)
	}

	tags, err = r.Tags(ctx, TagsOptions{Limit: 3})
	if err != nil || !reflect.DeepEqual(tags, want[:3]) {
		t.Fatalf("limit 3: %v %v", tags, err)
	}
	if n := countTags(); n != 2 {
		t.Errorf("limit 3 in pages of 2: %d requests, want 2 (no page past the limit)", n)
	}

	// The page size asked for is sent as n=.
	var gotN []string
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			gotN = append(gotN, r.URL.Query().Get("n"))
		}
		return false
	}
	_, _ = r.Tags(ctx, TagsOptions{PageSize: 7})
	_, _ = r.Tags(ctx, TagsOptions{})
	_, _ = r.Tags(ctx, TagsOptions{Limit: 1})
	// The first request of each listing carries ours; the next pages the
	// registry's Link (this one links with its own n=2).
	if len(gotN) != 7 || gotN[0] != "7" || gotN[3] != "1000" || gotN[6] != "1" {
		t.Errorf("n sent: %v", gotN)
	}

	// A tag that is not a tag (here with a terminal escape) fails the listing.
	f.hook = func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"name":"tags/app","tags":["ok","bad\u001b[2J"]}`)
		return true
	}
	if _, err := r.Tags(ctx, TagsOptions{}); !errors.Is(err, ErrUpstream) || !strings.Contains(err.Error(), "invalid tag") {
		t.Errorf("invalid tag: %v", err)
	}
}

// A listing is bounded in the memory its tags take, not only in the bytes
// read: a count of tags, and bytes counted as each tag's length plus its
// 16-byte header (1,000,000 and 32 MiB in wharfd; here 10,000 and 320 KiB,
// injected, with the same pages scaled down). Each fails with ErrUpstream
// naming the bound.
func TestTagsBoundedInMemory(t *testing.T) {
	ctx := context.Background()
	f := newFakeRegistry(t)
	f.addImage("tags/app", "1", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	s.listLimit = listing.Limit{Names: 10_000, Memory: 320 << 10}
	r := mustRepo(t, s, f.host()+"/tags/app")
	page := func(tag string, n int) []byte {
		var b strings.Builder
		b.WriteString(`{"name":"tags/app","tags":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + tag + `"`)
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
	long := strings.Repeat("t", 128)
	for _, tc := range []struct {
		name  string
		tag   string
		n     int // tags a page
		pages int
		want  string // "" = accepted
	}{
		{"one-letter tags at the count", "a", 5_000, 2, ""},
		{"one-letter tags past the count", "a", 5_001, 2, "more than 10000 tags"},
		{"long tags within the memory budget", long, 280, 8, ""},
		{"long tags past the memory budget", long, 280, 9, "more than 327680 bytes in memory"},
	} {
		body := page(tc.tag, tc.n)
		served := 0
		f.hook = func(w http.ResponseWriter, hr *http.Request) bool {
			if !strings.HasSuffix(hr.URL.Path, "/tags/list") {
				return false
			}
			if served++; served < tc.pages {
				w.Header().Set("Link", fmt.Sprintf(`</v2/tags/app/tags/list?last=p%d>; rel="next"`, served))
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
			return true
		}
		tags, err := r.Tags(ctx, TagsOptions{})
		switch {
		case tc.want == "" && (err != nil || len(tags) != tc.n*tc.pages):
			t.Errorf("%s: %d tags, %v", tc.name, len(tags), err)
		case tc.want != "" && (!errors.Is(err, ErrUpstream) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want ErrUpstream with %q", tc.name, err, tc.want)
		}
	}
}

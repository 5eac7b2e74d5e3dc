package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
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

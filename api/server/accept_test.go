package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"

	"github.com/wharfproject/wharf/api/types"
)

func TestMatchAcceptStrict(t *testing.T) {
	tests := []struct {
		accept []string
		want   string
	}{
		{nil, ""},
		{[]string{""}, ""},
		{[]string{"*/*"}, ""},
		{[]string{"application/*"}, ""},
		{[]string{"application/json"}, ""},
		{[]string{"application/jsonl"}, mediaTypeJSONLines},
		{[]string{"Application/JSONL"}, mediaTypeJSONLines},
		{[]string{"application/x-ndjson"}, mediaTypeNDJSON},
		{[]string{"application/json-seq"}, mediaTypeJSONSequence},
		{[]string{"application/json-seq, application/jsonl"}, mediaTypeJSONLines}, // equal q: the earlier offer
		{[]string{"application/json-seq;q=0.9, application/x-ndjson;q=0.5"}, mediaTypeJSONSequence},
		{[]string{"application/jsonl;q=0, application/x-ndjson"}, mediaTypeNDJSON},
		{[]string{"application/jsonl;q=0"}, ""},
		{[]string{"application/jsonl;q=abc"}, ""},
		{[]string{"application/jsonl;q=2"}, ""},
		{[]string{"text/plain", "application/x-ndjson ; q=0.3"}, mediaTypeNDJSON},
		{[]string{"application/jsonl; charset=utf-8"}, mediaTypeJSONLines},
		{[]string{strings.Repeat("a/b,", 100) + "application/jsonl"}, ""}, // beyond maxAcceptRanges
	}
	for _, tc := range tests {
		if got := matchAcceptStrict(tc.accept, eventStreamTypes); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.accept, got, tc.want)
		}
	}
}

func FuzzMatchAcceptStrict(f *testing.F) {
	f.Add("application/jsonl;q=0.5, application/json-seq")
	f.Add(";;,,q=,;q=1e309")
	f.Fuzz(func(t *testing.T, h string) {
		got := matchAcceptStrict([]string{h}, eventStreamTypes)
		if got != "" && got != mediaTypeJSONLines && got != mediaTypeNDJSON && got != mediaTypeJSONSequence {
			t.Fatalf("%q: offered nothing like %q", h, got)
		}
	})
}

// GET /events as dockerd answers it across versions: the default content
// type (json below 1.52, jsonl from it), the one Accept names at every
// version, RS-framed records for json-seq, and the legacy status/id/from
// fields only below 1.52 (the daemon fills them; the route drops them).
func TestEventsContentTypeAndLegacyFields(t *testing.T) {
	b := &fakeBackend{subscribe: func(since, until time.Time, f types.Filters) ([]types.EventMessage, <-chan types.EventMessage, func()) {
		e := ev(events.ActionTag, "sha256:a", 100)
		e.Status, e.ID = "tag", "sha256:a" // as daemon/events.go fills them
		return []types.EventMessage{e}, nil, func() {}
	}}
	tests := []struct {
		version, accept, wantType string
		legacy                    bool
	}{
		{"1.41", "", "application/json", true},
		{"1.51", "", "application/json", true},
		{"1.51", "application/jsonl", "application/jsonl", true},
		{"1.52", "", "application/jsonl", false},
		{"1.53", "application/x-ndjson", "application/x-ndjson", false},
		{"1.55", "", "application/jsonl", false},
		{"1.55", "application/json", "application/jsonl", false},
		{"1.55", "application/json-seq", "application/json-seq", false},
		{"1.55", "*/*", "application/jsonl", false},
	}
	for _, tc := range tests {
		t.Run(tc.version+"/"+tc.accept, func(t *testing.T) {
			h := map[string]string{}
			if tc.accept != "" {
				h["Accept"] = tc.accept
			}
			rec := do(t, b, "GET", "/v"+tc.version+"/events?since=100&until=200", nil, h)
			if rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); got != tc.wantType {
				t.Errorf("Content-Type %q, want %q", got, tc.wantType)
			}
			body := rec.Body.String()
			if tc.wantType == mediaTypeJSONSequence {
				if !strings.HasPrefix(body, "\x1e{") {
					t.Fatalf("json-seq record without RS: %q", body)
				}
				body = strings.TrimPrefix(body, "\x1e")
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatalf("%q: %v", body, err)
			}
			_, hasStatus := m["status"]
			_, hasID := m["id"]
			if hasStatus != tc.legacy || hasID != tc.legacy {
				t.Errorf("legacy fields: status %v id %v, want %v: %s", hasStatus, hasID, tc.legacy, body)
			}
			if m["Action"] != "tag" {
				t.Errorf("event %s", body)
			}
		})
	}
}

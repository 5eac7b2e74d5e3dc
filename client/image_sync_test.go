package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/registry"
)

// TestImageSync: the options go as the JSON body, the credentials in
// X-Registry-Config (never in the body), each event reaches fn and the
// summary is returned; an error line after events is the call's error.
func TestImageSync(t *testing.T) {
	r, c := newRecorder(t, http.StatusOK, "application/x-ndjson",
		`{"status":"skipped","source":"a.example/x:1","destination":"b.example/x:1","digest":"sha256:a"}`+"\n"+
			`{"status":"failed","source":"a.example/x:2","failure":{"image":"a.example/x:2","step":"copy","class":"not-found","message":"gone"}}`+"\n"+
			`{"summary":{"images":2,"synced":0,"skipped":1,"failed":1,"failures":[{"image":"a.example/x:2","step":"copy","class":"not-found","message":"gone"}]}}`+"\n")
	var events []SyncEvent
	sum, err := c.ImageSync(context.Background(), SyncOptions{Sources: []SyncSource{{Repository: "a.example/x"}}, Destination: "b.example", KeepGoing: true},
		map[string]registry.AuthConfig{"a.example": {Username: "u", Password: "secret"}}, func(ev SyncEvent) error {
			events = append(events, ev)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || events[1].Failure == nil || events[1].Failure.Class != "not-found" {
		t.Fatalf("events %+v", events)
	}
	if sum.Failed != 1 || sum.Failures[0].Step != "copy" {
		t.Fatalf("summary %+v", sum)
	}
	if strings.Contains(string(r.body), "secret") || r.last.Header.Get(ConfigHeader) == "" {
		t.Fatalf("credentials: body %s, header %q", r.body, r.last.Header.Get(ConfigHeader))
	}
	var opts SyncOptions
	if err := json.Unmarshal(r.body, &opts); err != nil || !opts.KeepGoing || opts.Destination != "b.example" {
		t.Fatalf("body %s: %v", r.body, err)
	}

	_, c = newRecorder(t, http.StatusOK, "application/x-ndjson", `{"status":"skipped"}`+"\n"+`{"message":"daemon shutting down"}`+"\n")
	if _, err := c.ImageSync(context.Background(), SyncOptions{}, nil, nil); err == nil || err.Error() != "daemon shutting down" {
		t.Fatalf("err = %v", err)
	}
	_, c = newRecorder(t, http.StatusOK, "application/x-ndjson", `{"status":"skipped"}`+"\n")
	if _, err := c.ImageSync(context.Background(), SyncOptions{}, nil, nil); err == nil {
		t.Fatal("a stream without a summary was taken")
	}
}

// TestImageSyncExportSummaryTrailer: the summary comes from the trailer
// once the body is read; without it the archive is not whole.
func TestImageSyncExportSummaryTrailer(t *testing.T) {
	for _, withTrailer := range []bool{true, false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Trailer", SyncSummaryTrailer)
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "tar bytes")
			if withTrailer {
				// base64url of {"images":1,"synced":1}
				w.Header().Set(SyncSummaryTrailer, "eyJpbWFnZXMiOjEsInN5bmNlZCI6MX0")
			}
		}))
		c, err := New("tcp://" + strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		exp, err := c.ImageSyncExport(context.Background(), SyncOptions{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(exp.Body)
		exp.Body.Close()
		sum, err := exp.Summary()
		if withTrailer && (err != nil || sum.Synced != 1 || string(b) != "tar bytes") {
			t.Fatalf("summary %+v, %v, body %q", sum, err, b)
		}
		if !withTrailer && err == nil {
			t.Fatal("an export without its trailer was taken as whole")
		}
		srv.Close()
	}
}

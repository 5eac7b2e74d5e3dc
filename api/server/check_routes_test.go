package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// checkingBackend is a fakeBackend that also runs the store check.
type checkingBackend struct {
	fakeBackend
	gotFull []bool
	report  *CheckReport
}

func (b *checkingBackend) SystemCheck(_ context.Context, full bool) (*CheckReport, error) {
	b.gotFull = append(b.gotFull, full)
	return b.report, nil
}

func TestSystemCheckRoute(t *testing.T) {
	b := &checkingBackend{report: &CheckReport{Full: true, Images: 1, Blobs: 3,
		Problems: []CheckProblem{{Kind: "missing-blob", Image: "sha256:aa", Object: "sha256:bb", Message: "image sha256:aa: layer 0 sha256:bb is missing"}}}}
	for _, tc := range []struct {
		path string
		full bool
	}{
		{"/wharf/system/check", true},
		{"/v1.50/wharf/system/check", true},
		{"/v1.50/wharf/system/check?full=0", false},
	} {
		rec := do(t, b, http.MethodGet, tc.path, nil, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.path, rec.Code, rec.Body)
		}
		var got CheckReport
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Problems) != 1 || got.Problems[0].Object != "sha256:bb" {
			t.Fatalf("%s: %+v", tc.path, got)
		}
		if last := b.gotFull[len(b.gotFull)-1]; last != tc.full {
			t.Fatalf("%s: full = %v, want %v", tc.path, last, tc.full)
		}
	}
	// A healthy store answers an empty list, never null.
	b.report = &CheckReport{}
	rec := do(t, b, http.MethodGet, "/wharf/system/check", nil, nil)
	if want := `"Problems":[]`; !json.Valid(rec.Body.Bytes()) || !strings.Contains(rec.Body.String(), want) {
		t.Fatalf("healthy: %s", rec.Body)
	}
}

func TestSystemCheckWithoutStoreIs501(t *testing.T) {
	rec := do(t, &fakeBackend{}, http.MethodGet, "/wharf/system/check", nil, nil)
	if rec.Code != http.StatusNotImplemented || message(t, rec) == "" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

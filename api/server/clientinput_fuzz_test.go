package server

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
)

// FuzzDecodeRegistryAuth: any X-Registry-Auth value decodes to anonymous
// (nil) or to credentials, never panics, and is not needed to be valid (as
// dockerd, an undecodable header is anonymous).
func FuzzDecodeRegistryAuth(f *testing.F) {
	enc := func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }
	for _, s := range []string{
		"", enc("{}"), enc(`{"username":"u","password":"p","serveraddress":"r"}`), enc(`{"identitytoken":"t"}`),
		enc(`{"username":`), enc(`[1]`), enc(`{}{}`), enc(`{"auth":"dTpw"}`), "!!!", "e30", "e30=", "e30K",
		base64.StdEncoding.EncodeToString([]byte(`{"username":"a+/"}`)), strings.Repeat("A", 4096),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest(http.MethodPost, "/images/create", nil)
		r.Header.Set(authHeader, h)
		a, err := decodeAuth(r)
		if err != nil && (len(h) <= maxAuthHeader || a != nil) {
			t.Errorf("decodeAuth(%d bytes) = %v, %v", len(h), a, err)
		}
	})
}

// FuzzAPIRequest sends arbitrary paths, queries, headers and bodies through
// the whole router to a backend that implements nothing: every answer must
// be a 4xx or the backend's 501 (never a 500: an unclassified error in the
// server's own parsing) with a message, and nothing may panic.
func FuzzAPIRequest(f *testing.F) {
	for _, seed := range []struct{ method, path, query, body string }{
		{"GET", "/v1.50/images/json", "filters=%7B%22dangling%22%3A%5B%22true%22%5D%7D", ""},
		{"GET", "/v1.50/images/json", "filters=%7B", ""},
		{"GET", "/v1.50/images/busybox/json", "remote=1&platform=%7B%22os%22%3A", ""},
		{"POST", "/v1.50/images/create", "fromImage=busybox&tag=latest&platform=linux/amd64", ""},
		{"POST", "/v1.50/images/create", "fromSrc=-&repo=a&changes=CMD%20x", "garbage"},
		{"POST", "/v1.50/images/a/tag", "repo=b&tag=c", ""},
		{"POST", "/v1.50/images/a/push", "tag=x&platform=%7B%7D", ""},
		{"POST", "/v1.50/images/load", "quiet=1", "x"},
		{"POST", "/v1.50/auth", "", `{"username":1}`},
		{"DELETE", "/v1.50/images/a", "force=1&noprune=1", ""},
		{"GET", "/v99/images/json", "", ""},
		{"GET", "/v1.12/images/json", "", ""},
		{"GET", "/v1.50/wharf/system/check", "full=maybe", ""},
		{"GET", "/v1.50/images/get", "names=a&names=b&platform=%7B", ""},
		{"GET", "/v1.50/distribution/a/json", "", ""},
	} {
		f.Add(seed.method, seed.path, seed.query, seed.body)
	}
	h := New(&fakeBackend{}, Options{ServerVersion: "fuzz", Logger: logrus.NewEntry(quietLogger())})
	f.Fuzz(func(t *testing.T, method, path, query, body string) {
		// /events streams until the client leaves: a recorder never does.
		if !validMethod(method) || !strings.HasPrefix(path, "/") || strings.Contains(path, "events") {
			return
		}
		u := &url.URL{Path: path, RawQuery: query}
		req, err := http.NewRequest(method, "http://wharfd"+u.RequestURI(), io.NopCloser(bytes.NewReader([]byte(body))))
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusNotImplemented {
			t.Fatalf("%s %s?%s: %d %s", method, path, query, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && strings.TrimSpace(rec.Body.String()) == "" {
			t.Fatalf("%s %s?%s: %d without a message", method, path, query, rec.Code)
		}
	})
}

func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete, http.MethodPut:
		return true
	}
	return false
}

func quietLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

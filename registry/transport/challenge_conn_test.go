package transport

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A 401 whose body the caller closes unread (as oras-go does) must not cost
// a new connection for the retry; a body over the cap still reads whole.
func TestChallengeBodyKeepsConnection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body      string
		wantConns int64
	}{
		{"small error document", `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, 1},
		{"body over the read-ahead cap", strings.Repeat("x", maxChallengeBody+100), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") == "" {
					w.Header().Set("Www-Authenticate", `Bearer realm="http://`+r.Host+`/token",service="reg"`)
					w.WriteHeader(http.StatusUnauthorized)
					io.WriteString(w, tc.body)
					return
				}
				io.WriteString(w, "ok")
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			m := newChallengeMemo(tr)

			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v2/team/app/manifests/1", nil)
			resp, err := m.RoundTrip(req)
			if err != nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("first request: %v %v", resp, err)
			}
			resp.Body.Close() // unread, as oras-go's auth client does

			req, _ = http.NewRequest(http.MethodGet, srv.URL+"/v2/team/app/manifests/1", nil)
			req.Header.Set("Authorization", "Bearer t")
			resp, err = m.RoundTrip(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("retry: %v %v", resp, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := conns.Load(); got != tc.wantConns {
				t.Errorf("connections = %d, want %d", got, tc.wantConns)
			}
		})
	}
}

// The body handed on after a read-ahead is the registry's, byte for byte.
func TestChallengeBodyIsPreserved(t *testing.T) {
	for _, body := range []string{"", `{"errors":[]}`, strings.Repeat("y", maxChallengeBody+1)} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Www-Authenticate", `Bearer realm="http://`+r.Host+`/token"`)
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, body)
		}))
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v2/", nil)
		resp, err := newChallengeMemo(http.DefaultTransport).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if err != nil || string(got) != body {
			t.Errorf("body of %d bytes: got %d bytes, %v", len(body), len(got), err)
		}
	}
}

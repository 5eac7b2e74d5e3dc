package transport

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tokenRegistry is a registry and its token server on one test server:
// /v2/ wants "Bearer tok-N" (any N), /token hands tokens out.
type tokenRegistry struct {
	srv                 *httptest.Server
	v2, challenged, tok atomic.Int32
	expiresIn           string
	challenge           func(r *http.Request) []string // nil: Bearer realm=<srv>/token
}

func newTokenRegistry(t *testing.T) *tokenRegistry {
	t.Helper()
	tr := &tokenRegistry{expiresIn: "300"}
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			n := tr.tok.Add(1)
			io.WriteString(w, `{"token":"tok-`+string(rune('0'+n))+`","expires_in":`+tr.expiresIn+`}`)
			return
		}
		tr.v2.Add(1)
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok-") {
			tr.challenged.Add(1)
			values := []string{`Bearer realm="http://` + r.Host + `/token",service="reg"`}
			if tr.challenge != nil {
				values = tr.challenge(r)
			}
			for _, v := range values {
				w.Header().Add("Www-Authenticate", v)
			}
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(tr.srv.Close)
	return tr
}

func (tr *tokenRegistry) host() string { return strings.TrimPrefix(tr.srv.URL, "http://") }

func testStack(t *testing.T, opts Options) *Stack {
	t.Helper()
	s, err := New(hostsConfig(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// get sends GET path with a pull scope on repo through c; the answer's status.
func get(t *testing.T, c *Client, base, repo string) int {
	t.Helper()
	u := base + "/v2/" + repo + "/manifests/1"
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req = req.WithContext(WithRepositoryScope(context.Background(), req.URL.Host, repo, ActionPull))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// The request counts the budgets in docs/architecture.md rest on: cold,
// one 401 and one token; warm, the request alone; a new repository on a
// known registry, its token and the request (no 401); an expired token,
// the token again and the request.
func TestClientRequestBudget(t *testing.T) {
	tr := newTokenRegistry(t)
	s := testStack(t, Options{})
	c := s.NewClient(ClientConfig{Identity: "anon"})
	now := time.Now()
	c.tokens.now = func() time.Time { return now }
	for _, step := range []struct {
		name                string
		repo                string
		advance             time.Duration
		v2, challenged, tok int32
	}{
		{"cold", "team/a", 0, 2, 1, 1},
		{"warm", "team/a", 0, 1, 0, 0},
		{"new repository, known registry", "team/b", 0, 1, 0, 1},
		{"warm again", "team/b", 0, 1, 0, 0},
		{"token expired", "team/a", 296 * time.Second, 1, 0, 1},
	} {
		now = now.Add(step.advance)
		tr.v2.Store(0)
		tr.challenged.Store(0)
		tr.tok.Store(0)
		if st := get(t, c, tr.srv.URL, step.repo); st != http.StatusOK {
			t.Fatalf("%s: status %d", step.name, st)
		}
		if tr.v2.Load() != step.v2 || tr.challenged.Load() != step.challenged || tr.tok.Load() != step.tok {
			t.Errorf("%s: %d requests, %d 401s, %d tokens; want %d, %d, %d", step.name, tr.v2.Load(), tr.challenged.Load(), tr.tok.Load(), step.v2, step.challenged, step.tok)
		}
	}
	// Another identity shares the realm memo, not the tokens.
	tr.v2.Store(0)
	tr.tok.Store(0)
	other := s.NewClient(ClientConfig{Identity: "someone else"})
	if st := get(t, other, tr.srv.URL, "team/a"); st != http.StatusOK || tr.v2.Load() != 1 || tr.tok.Load() != 1 {
		t.Errorf("another identity: status %d, %d requests, %d tokens; want 200, 1, 1", st, tr.v2.Load(), tr.tok.Load())
	}
}

// A 401 offering Negotiate first is answered with its Bearer challenge,
// which is remembered for the host.
func TestClientPrefersBearerAmongChallenges(t *testing.T) {
	tr := newTokenRegistry(t)
	tr.challenge = func(r *http.Request) []string {
		return []string{"Negotiate", `Bearer realm="http://` + r.Host + `/token",service="reg"`}
	}
	s := testStack(t, Options{})
	if st := get(t, s.NewClient(ClientConfig{}), tr.srv.URL, "team/a"); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	if realm, ok := s.RememberedRealm(tr.host()); !ok || realm != tr.srv.URL+"/token" {
		t.Errorf("realm %q %v not remembered", realm, ok)
	}
}

// A 401 whose body is small is read to its end before the retry, so the
// retry reuses the connection; a body over the cap costs a new one.
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
				switch {
				case r.URL.Path == "/token":
					io.WriteString(w, `{"token":"t"}`)
				case r.Header.Get("Authorization") == "":
					w.Header().Set("Www-Authenticate", `Bearer realm="http://`+r.Host+`/token",service="reg"`)
					w.WriteHeader(http.StatusUnauthorized)
					io.WriteString(w, tc.body)
				default:
					io.WriteString(w, "ok")
				}
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1}
			defer tr.CloseIdleConnections()
			s := testStack(t, Options{Transport: tr})
			if st := get(t, s.NewClient(ClientConfig{}), srv.URL, "team/app"); st != http.StatusOK {
				t.Fatalf("status %d", st)
			}
			if got := conns.Load(); got != tc.wantConns {
				t.Errorf("connections = %d, want %d", got, tc.wantConns)
			}
		})
	}
}

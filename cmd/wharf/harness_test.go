package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeEnv is a fixed environment: no WHARF_HOST, HOME and DOCKER_CONFIG in
// temp dirs, a non-root user.
type fakeEnv map[string]string

func (e fakeEnv) Getenv(k string) string { return e[k] }
func (e fakeEnv) Geteuid() int           { return 1000 }

// fakeDaemon plays wharfd: handler answers, every request is recorded.
type fakeDaemon struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []*http.Request
	bodies  [][]byte
	handler func(w http.ResponseWriter, r *http.Request)
}

func newFakeDaemon(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *fakeDaemon {
	t.Helper()
	d := &fakeDaemon{t: t, handler: h}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.reqs = append(d.reqs, r)
		d.bodies = append(d.bodies, b)
		d.mu.Unlock()
		d.handler(w, r)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *fakeDaemon) host() string { return "tcp://" + strings.TrimPrefix(d.srv.URL, "http://") }

func (d *fakeDaemon) requests() []*http.Request {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*http.Request(nil), d.reqs...)
}

// paths lists METHOD PATH?QUERY of every request.
func (d *fakeDaemon) paths() []string {
	var out []string
	for _, r := range d.requests() {
		s := r.Method + " " + r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			s += "?" + r.URL.RawQuery
		}
		out = append(out, s)
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// result is one CLI run.
type result struct {
	code   int
	stdout string
	stderr string
}

// runCLI runs the CLI in-process against host with env.
func runCLI(t *testing.T, env fakeEnv, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, newStreams(strings.NewReader(stdin), &out, &errb), env)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// testEnv returns an environment with HOME and DOCKER_CONFIG in temp dirs.
func testEnv(t *testing.T) fakeEnv {
	t.Helper()
	return fakeEnv{"HOME": t.TempDir(), "DOCKER_CONFIG": t.TempDir()}
}

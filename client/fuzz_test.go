package client

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzDecodeError feeds arbitrary error bodies: decodeError must never panic
// and must always keep the status code and give a non-empty message.
func FuzzDecodeError(f *testing.F) {
	for _, s := range []string{
		`{"message":"No such image: x"}`,
		`{"message":""}`,
		`{"message":null}`,
		`{"cause":"x","message":"y","response":404}`,
		"Not Found\n",
		"",
		`{"message":`,
		`[1,2]`,
	} {
		f.Add(404, s)
	}
	f.Fuzz(func(t *testing.T, status int, body string) {
		if status < 100 || status > 999 {
			return
		}
		resp := &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(body))}
		err := decodeError(resp)
		e, ok := err.(*Error)
		if !ok {
			t.Fatalf("%T", err)
		}
		if e.StatusCode != status || e.Message == "" {
			t.Fatalf("got %d %q", e.StatusCode, e.Message)
		}
	})
}

// FuzzParseHost: no panics, and an accepted host has a known protocol and an address.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"unix:///run/wharf/wharf.sock", "tcp://127.0.0.1:2375", "/tmp/x.sock", "unix://", "ssh://x", "http://[::1]:1", "%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, a, err := ParseHost(s)
		if err != nil {
			return
		}
		if (p != "unix" && p != "tcp" && p != "http") || a == "" {
			t.Fatalf("ParseHost(%q) = %q %q", s, p, a)
		}
	})
}

// FuzzDecodePathStat feeds arbitrary X-Docker-Container-Path-Stat values:
// no panic, and an empty value is an error, never a zero stat.
func FuzzDecodePathStat(f *testing.F) {
	for _, s := range []string{
		"eyJuYW1lIjoiaG9zdHMiLCJzaXplIjozLCJtb2RlIjo0MjAsIm10aW1lIjoiMjAyNC0wMS0wMVQwMDowMDowMFoiLCJsaW5rVGFyZ2V0IjoiIn0=",
		"",
		"!!",
		"e30=",
		"bnVsbA==",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		st, err := decodePathStat(http.Header{PathStatHeader: {v}})
		if err == nil && v == "" {
			t.Fatalf("an empty header decoded to %+v", st)
		}
	})
}

package client

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/wharfproject/wharf/api/types"
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

// FuzzParseUpdateEvent: whatever a daemon sends in an update event's
// summary attributes, the parse never panics, and a summary it decodes
// came from an attribute within the cap.
func FuzzParseUpdateEvent(f *testing.F) {
	f.Add(`{"PackagesChanged":[{"Name":"libfoo","Type":"deb","From":"1","To":"2"}],"PullBytes":12}`, "libfoo 1→2")
	f.Add(`{"PullBytes":"x"}`, "")
	f.Add(`null`, "…")
	f.Fuzz(func(t *testing.T, diff, pkgs string) {
		var m types.EventMessage
		m.Type, m.Action = "image", EventOutdated
		m.Actor.Attributes = map[string]string{"name": "r/app:1", "wharf.diff": diff, "packages.changed": pkgs}
		e, ok := ParseUpdateEvent(m)
		if !ok {
			t.Fatal("an outdated image event not taken")
		}
		if e.Diff != nil && len(diff) > maxDiffAttribute {
			t.Fatalf("decoded a summary of %d bytes", len(diff))
		}
		if e.PackagesChanged != pkgs {
			t.Fatalf("packages.changed %q, sent %q", e.PackagesChanged, pkgs)
		}
	})
}

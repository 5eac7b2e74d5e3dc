package integration

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"gopkg.in/check.v1"
)

// ClientInputSuite: hostile or broken input from API clients gets a 4xx with
// a message, writes nothing outside the store, and leaves wharfd serving.
type ClientInputSuite struct {
	suiteFixture
	d *Daemon
}

func TestClientInputSuite(t *testing.T) { t.Parallel(); runSuite(t, &ClientInputSuite{}) }

func (s *ClientInputSuite) SetUpSuite(c *check.C) { s.d = s.startDaemon(c) }

// TearDownTest: whatever a test sent, the daemon still answers and the
// store is clean.
func (s *ClientInputSuite) TearDownTest(c *check.C) {
	c.Assert(s.d.Get(c, "/_ping").Status, check.Equals, http.StatusOK)
	rep, code := systemCheck(c, s.d)
	c.Assert(code, check.Equals, 0, check.Commentf("%s", rep))
}

// clientError asserts a 4xx answer with a message; a 200 stream must carry
// an error message instead. It returns the message.
func clientError(c *check.C, r Response, what string) string {
	msg := r.Message()
	if r.Status == http.StatusOK && strings.Contains(r.Header.Get("Content-Type"), "json") {
		msg = r.Lines(c).Err()
	} else {
		c.Check(r.Status >= 400 && r.Status < 500, check.Equals, true, check.Commentf("%s: want 4xx: %s", what, r))
		if msg == "" { // non-JSON 4xx from net/http (431): the text is the message
			msg = strings.TrimSpace(string(r.Body))
		}
	}
	c.Check(msg, check.Not(check.Equals), "", check.Commentf("%s: no message: %s", what, r))
	return msg
}

func (s *ClientInputSuite) importTar(c *check.C, repo string, tarb []byte) Response {
	q := url.Values{"fromSrc": {"-"}, "repo": {repo}}
	return s.d.Req(c, http.MethodPost, "/v1.50/images/create?"+q.Encode(), bytes.NewReader(tarb), "Content-Type", "application/x-tar")
}

// Import never extracts: a rootfs tar is validated and stored as one layer.
// Entries that climb out with ".." (names or hard-link targets) are refused
// as dockerd refuses them when applying a layer; absolute names and
// symlinks pointing anywhere are legal in a rootfs (dockerd cleans them) and
// are stored as data; in no case is a file written outside the store.
func (s *ClientInputSuite) TestImportWithEntriesEscapingTheRoot(c *check.C) {
	outside := c.MkDir()
	canary := outside + "/canary"
	victim := outside + "/victim"
	c.Assert(writeFile(victim, "untouched"), check.IsNil)
	up := strings.Repeat("../", 30)
	cases := []struct {
		name    string
		entries []tarEntry
		refused bool
	}{
		{"dotdot", []tarEntry{{name: up + strings.TrimPrefix(canary, "/"), body: "pwned"}}, true},
		{"dotdot-inside", []tarEntry{{name: "etc/../../canary", body: "pwned"}}, true},
		{"hardlink-dotdot", []tarEntry{{name: "etc/hl", link: up + strings.TrimPrefix(victim, "/"), hardlink: true}}, true},
		{"absolute", []tarEntry{{name: canary, body: "pwned"}}, false},
		{"hardlink-absolute", []tarEntry{{name: "etc/x", body: "x"}, {name: "etc/hl", link: victim, hardlink: true}}, false},
		{"symlink-out-then-through", []tarEntry{{name: "evil", link: outside, symlink: true}, {name: "evil/canary", body: "pwned"}}, false},
	}
	for _, tc := range cases {
		r := s.importTar(c, "escape/"+tc.name+":1", makeTar(c, tc.entries))
		if tc.refused {
			msg := clientError(c, r, tc.name)
			c.Check(msg, check.Matches, "(?i).*(escapes|invalid).*", check.Commentf("%s", tc.name))
			c.Check(s.d.Get(c, "/v1.50/images/escape/"+tc.name+":1/json").Status, check.Equals, http.StatusNotFound)
		} else {
			c.Check(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: %s", tc.name, r))
			c.Check(r.Lines(c).Err(), check.Equals, "", check.Commentf("%s", tc.name))
		}
		c.Check(fileExists(canary), check.Equals, false, check.Commentf("%s: wrote %s outside the store", tc.name, canary))
		c.Check(readFile(victim), check.Equals, "untouched", check.Commentf("%s: modified %s", tc.name, victim))
	}
}

func (s *ClientInputSuite) TestImportGarbageAndEmptyBodies(c *check.C) {
	for name, body := range map[string][]byte{
		"empty":    nil,
		"garbage":  bytes.Repeat([]byte("not a tar "), 1000),
		"xz":       {0xfd, '7', 'z', 'X', 'Z', 0x00, 1, 2, 3},
		"bad-gzip": {0x1f, 0x8b, 0xff, 0xff, 0, 0, 0},
	} {
		msg := clientError(c, s.importTar(c, "garbage/"+name+":1", body), name)
		c.Check(msg, check.Not(check.Matches), "(?s).*(goroutine|panic).*")
	}
}

func (s *ClientInputSuite) TestLoadOversizedManifestJSONIsRefused(c *check.C) {
	// 5 MiB of JSON-looking bytes: over the 4 MiB manifest cap.
	big := "[" + strings.Repeat(`{"Config":"x"},`, (5<<20)/15) + `{"Config":"x"}]`
	r := s.d.Req(c, http.MethodPost, "/v1.50/images/load?quiet=1", bytes.NewReader(makeTar(c, []tarEntry{{name: "manifest.json", body: big}})), "Content-Type", "application/x-tar")
	msg := clientError(c, r, "oversized manifest.json")
	c.Check(msg, check.Matches, ".*manifest.json too large.*")
	// Also a malformed one.
	r = s.d.Req(c, http.MethodPost, "/v1.50/images/load?quiet=1", bytes.NewReader(makeTar(c, []tarEntry{{name: "manifest.json", body: `[{"Config": 7`}})), "Content-Type", "application/x-tar")
	clientError(c, r, "malformed manifest.json")
}

func (s *ClientInputSuite) TestHugeQueryStrings(c *check.C) {
	// 1 MiB query: net/http's 1 MiB header cap answers 431.
	r := s.d.Get(c, "/v1.50/images/json?filters="+strings.Repeat("A", 1<<20))
	clientError(c, r, "1 MiB query")
	// Just under the cap: parsed, and the garbage is a 400 with a message.
	r = s.d.Get(c, "/v1.50/images/json?filters="+strings.Repeat("A", 900<<10))
	c.Check(r.Status, check.Equals, http.StatusBadRequest, check.Commentf("%s", r.Status))
	c.Check(r.Message(), check.Not(check.Equals), "")
	// Many parameters.
	r = s.d.Get(c, "/v1.50/images/json?"+strings.Repeat("a=1&", 100000))
	c.Check(r.Status < 500, check.Equals, true, check.Commentf("%d", r.Status))
	// A 300 KiB image name.
	r = s.d.Get(c, "/v1.50/images/"+strings.Repeat("a", 300<<10)+"/json")
	clientError(c, r, "huge name")
}

func (s *ClientInputSuite) TestInvalidJSONBodiesAndParameters(c *check.C) {
	for _, tc := range []struct {
		method, path, body string
		hdr                []string
	}{
		{"POST", "/v1.50/auth", `{"username":`, nil},
		{"POST", "/v1.50/auth", `[1,2,3]`, nil},
		{"POST", "/v1.50/auth", strings.Repeat(" ", 2<<20) + "{}", nil},
		{"GET", "/v1.50/images/json?filters=" + url.QueryEscape(`{"dangling":`), "", nil},
		{"GET", "/v1.50/images/json?filters=" + url.QueryEscape(`{"nosuchfilter":{"x":true}}`), "", nil},
		{"GET", "/v1.50/images/busybox/json?platform=" + url.QueryEscape(`{"os":`), "", nil},
		{"POST", "/v1.50/images/create?fromImage=127.0.0.1:1/x&tag=1&platform=" + url.QueryEscape("linux/amd64/v3/extra"), "", nil},
		{"POST", "/v1.50/images/create?fromImage=" + url.QueryEscape("UPPER/Case"), "", nil},
		{"POST", "/v1.50/images/create?fromSrc=-&repo=" + url.QueryEscape("bad repo"), "", nil},
		{"POST", "/v1.50/images/create?fromSrc=-&changes=" + url.QueryEscape("FROBNICATE x"), "", nil},
		{"POST", "/v1.50/images/nosuch/tag?repo=" + url.QueryEscape("a b"), "", nil},
		{"GET", "/v1.50/events?since=notatime", "", nil},
	} {
		what := tc.method + " " + tc.path
		if len(what) > 120 {
			what = what[:120]
		}
		r := s.d.Req(c, tc.method, tc.path, strings.NewReader(tc.body), tc.hdr...)
		msg := clientError(c, r, what)
		c.Check(msg, check.Not(check.Matches), "(?s).*(goroutine|panic).*")
	}
}

// An undecodable X-Registry-Auth means anonymous, as in dockerd (which
// ignores the decoding error for pull and push); one over the 64 KiB cap is
// a 400; the header's value never comes back in the answer.
func (s *ClientInputSuite) TestUndecodableRegistryAuthIsAnonymousAndNotEchoed(c *check.C) {
	for _, tc := range []struct {
		hdr    string
		status int
	}{
		{"!!!not-base64-SECRETVALUE!!!", http.StatusServiceUnavailable},
		{"e30K" + strings.Repeat("A", 100) + "SECRETVALUE", http.StatusServiceUnavailable},
		{strings.Repeat("QUFB", 64<<10), http.StatusBadRequest},
	} {
		r := s.d.Req(c, http.MethodPost, "/v1.50/images/create?fromImage=127.0.0.1:1/x&tag=1", nil, "X-Registry-Auth", tc.hdr)
		c.Check(r.Status, check.Equals, tc.status, check.Commentf("%s", r))
		c.Check(strings.Contains(string(r.Body), "SECRETVALUE") || strings.Contains(string(r.Body), "QUFBQUFB"), check.Equals, false, check.Commentf("%s", r))
	}
}

func (s *ClientInputSuite) TestUnknownAPIVersions(c *check.C) {
	for _, tc := range []struct {
		path   string
		status int
		msg    string
	}{
		{"/v99.0/images/json", 400, "client version 99.0 is too new.*"},
		{"/v1.99/images/json", 400, "client version 1.99 is too new.*"},
		{"/v1.0/images/json", 400, "client version 1.0 is too old.*"},
		{"/v0/images/json", 400, ".*too old.*"},
		{"/v1.50.0.0.0/images/json", 200, ""},
		{"/vX/images/json", 404, "page not found"},
		{"/v/images/json", 404, "page not found"},
		{"/v1.50/no/such/endpoint", 404, "page not found"},
		{"/v" + strings.Repeat("9", 1000) + "/images/json", 400, ".*too new.*"},
	} {
		r := s.d.Get(c, tc.path)
		what := tc.path
		if len(what) > 60 {
			what = what[:60]
		}
		c.Check(r.Status, check.Equals, tc.status, check.Commentf("%s: %s", what, r.Body))
		if tc.msg != "" {
			// Below API 1.24 errors are plain text, as dockerd sends them.
			msg := r.Message()
			if msg == "" {
				msg = strings.TrimSpace(string(r.Body))
			}
			c.Check(msg, check.Matches, tc.msg, check.Commentf("%s", what))
		}
	}
}

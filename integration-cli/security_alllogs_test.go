package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/moby/moby/api/types/registry"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// Every wharfd log of the whole run is searched for credentials and tokens
// once all suites have finished. check.v1 deletes each suite's temp
// directories when the suite ends, so the Daemon harness writes wharfd.log
// into a directory of the run instead (daemonLogPath), which TestMain makes
// before the tests and searches, then removes, after them (searchAll). A
// -check.work keeps it in place and prints its path.

// runLogs is the run's collection of wharfd logs (nil: not collected).
var runLogs *logCollection

type logCollection struct {
	root string
	keep bool // -check.work: leave the logs in place
}

// startLogCollection makes the directory every wharfd log of the run goes
// to; nil when it cannot (the logs then stay in each suite's directories
// and are not searched).
func startLogCollection() *logCollection {
	d, err := os.MkdirTemp("", "wharf-it-logs-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration-cli: no directory for the wharfd logs, they will not be searched: %v\n", err)
		return nil
	}
	runLogs = &logCollection{root: d, keep: flagOn("check.work") || flagOn("gocheck.work")}
	return runLogs
}

// daemonLogPath is where a new Daemon writes its log: a directory of its
// own in the run's collection, or base (one of the suite's directories)
// when logs are not collected.
func daemonLogPath(c *check.C, base string) string {
	if runLogs == nil {
		return filepath.Join(base, "wharfd.log")
	}
	d, err := os.MkdirTemp(runLogs.root, "wharfd-")
	c.Assert(err, check.IsNil)
	return filepath.Join(d, "wharfd.log")
}

// knownSecrets are the credentials every suite uses (the test registries'
// default user), in each form that could leak: the password, the basic
// Authorization value, and the base64url prefixes of an X-Registry-Auth
// holding it as wharf/curl-style maps (sorted keys) and as the docker CLI
// and SDK encode AuthConfig (username first).
func knownSecrets() map[string]string {
	u, p := testregistry.DefaultUsername, testregistry.DefaultPassword
	prefix := func(s string) string {
		s = s[:len(s)/3*3] // whole base64 quanta only: the encoding is then a stable prefix
		return base64.URLEncoding.EncodeToString([]byte(s))
	}
	return map[string]string{
		"password":                               p,
		"wrong password used by the suites":      p + "-WRONG",
		"basic Authorization value":              base64.StdEncoding.EncodeToString([]byte(u + ":" + p)),
		"X-Registry-Auth (sorted keys)":          prefix(fmt.Sprintf(`{"password":%q,`, p)),
		"X-Registry-Auth (docker CLI, username)": prefix(fmt.Sprintf(`{"username":%q,"password":%q,`, u, p)),
	}
}

// searchAll reads every wharfd log of the run for the known secrets and
// tokens, reports each it finds on stderr, and removes the logs (unless
// -check.work). It is false when a log holds a secret or the search
// itself is wrong.
func (lc *logCollection) searchAll() bool {
	defer func() {
		if lc.keep {
			fmt.Printf("integration-cli: wharfd logs kept in %s\n", lc.root)
			return
		}
		os.RemoveAll(lc.root)
	}()
	ok := true
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "FAIL: no secret in any wharfd log: "+format+"\n", args...)
		ok = false
	}
	var logs []string
	_ = filepath.WalkDir(lc.root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "wharfd.log" {
			logs = append(logs, p)
		}
		return nil
	})
	if len(logs) == 0 {
		return true // no suite started a wharfd
	}
	fmt.Printf("integration-cli: searching %d wharfd logs for secrets\n", len(logs))
	secrets := knownSecrets()
	// The prefixes must match the headers the suites really send, or this
	// search proves nothing.
	u, pw := testregistry.DefaultUsername, testregistry.DefaultPassword
	sdk, _ := json.Marshal(registry.AuthConfig{Username: u, Password: pw, ServerAddress: "127.0.0.1:5000"})
	for what, hdr := range map[string]string{
		"X-Registry-Auth (sorted keys)":          RegistryAuth(u, pw, "127.0.0.1:5000"),
		"X-Registry-Auth (docker CLI, username)": base64.URLEncoding.EncodeToString(sdk),
	} {
		if !strings.Contains(hdr, secrets[what]) {
			fail("%s: prefix %q does not match a real header %q", what, secrets[what], hdr)
			return false
		}
	}
	tokens := []*regexp.Regexp{jwtPattern, refreshPattern}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			fail("%v", err)
			continue
		}
		log := string(b)
		for what, s := range secrets {
			if i := strings.Index(log, s); i >= 0 {
				fail("%s holds the %s: …%s…", p, what, excerpt(log, i, len(s)))
			}
		}
		for _, re := range tokens {
			if loc := re.FindStringIndex(log); loc != nil {
				fail("%s holds a token (%s): …%s…", p, re, excerpt(log, loc[0], loc[1]-loc[0]))
			}
		}
	}
	return ok
}

// excerpt is the log line around the secret at log[i:i+n], with the secret
// replaced by <SECRET> so that the failure message does not spread it.
func excerpt(log string, i, n int) string {
	start := strings.LastIndex(log[:i], "\n") + 1
	end := strings.Index(log[i:], "\n")
	if end < 0 {
		end = len(log) - i
	}
	line := log[start:i] + "<SECRET>" + log[min(i+n, i+end):i+end]
	if len(line) > 300 {
		line = line[:300]
	}
	return line
}

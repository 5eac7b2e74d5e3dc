package integration

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// Every wharfd log of the whole run is searched for credentials and tokens
// once all suites have finished. check.v1 deletes each suite's temp
// directories (where the Daemon harness keeps wharfd.log) when the suite
// ends, so, without changing the harness:
//
//   - TestCollectDaemonLogs (clientinput_logcollect_test.go, a file that
//     sorts before main_test.go, so it runs after TestMain built the
//     binaries and before Test runs the suites) points TMPDIR at a private
//     directory and sets -check.work, so that every suite's directories
//     are made there and kept;
//   - TestZZNoSecretInAnyDaemonLog (this file sorts after main_test.go, so
//     it runs after Test) reads every wharfd.log there, then puts TMPDIR
//     and -check.work back and removes the directory.
//
// A -check.work given on the command line keeps its meaning (the directory
// is then left in place and its path printed). Running only some tests
// (-run) without both of these just searches nothing.

// logsRoot is the private TMPDIR of this run ("" when not collecting).
var logsRoot string

// userKeepsWork is true when -check.work was asked for explicitly.
var userKeepsWork bool

// origTMPDIR is TMPDIR before collection changed it (hadTMPDIR: it was set).
var (
	origTMPDIR string
	hadTMPDIR  bool
)

// startLogCollection is TestCollectDaemonLogs's work.
func startLogCollection(t *testing.T) {
	if logsRoot != "" {
		return
	}
	d, err := os.MkdirTemp("", "wharf-it-logs-")
	if err != nil {
		t.Skipf("no private TMPDIR, logs will not be searched: %v", err)
	}
	logsRoot = d
	origTMPDIR, hadTMPDIR = os.LookupEnv("TMPDIR")
	os.Setenv("TMPDIR", d)
	if f := flag.Lookup("check.work"); f != nil {
		userKeepsWork = f.Value.String() == "true"
		_ = f.Value.Set("true")
	}
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

func TestZZNoSecretInAnyDaemonLog(t *testing.T) {
	if logsRoot == "" {
		t.Skip("logs were not collected (TestCollectDaemonLogs did not run)")
	}
	// Afterwards the harness is as it was: the original TMPDIR, and suites
	// removing their directories again (so that -count=2 neither fails nor
	// leaks); a second round is not searched.
	defer func(root string) {
		if hadTMPDIR {
			os.Setenv("TMPDIR", origTMPDIR)
		} else {
			os.Unsetenv("TMPDIR")
		}
		if f := flag.Lookup("check.work"); f != nil {
			_ = f.Value.Set(fmt.Sprint(userKeepsWork))
		}
		if !userKeepsWork {
			os.RemoveAll(root)
		}
	}(logsRoot)
	root := logsRoot
	logsRoot = ""
	var logs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "wharfd.log" {
			logs = append(logs, p)
		}
		return nil
	})
	if len(logs) == 0 {
		t.Skip("no wharfd log was written (no suite ran)")
	}
	t.Logf("searching %d wharfd logs", len(logs))
	secrets := knownSecrets()
	// The prefixes must match the headers the suites really send, or this
	// test proves nothing.
	u, pw := testregistry.DefaultUsername, testregistry.DefaultPassword
	sdk, _ := json.Marshal(registry.AuthConfig{Username: u, Password: pw, ServerAddress: "127.0.0.1:5000"})
	for what, hdr := range map[string]string{
		"X-Registry-Auth (sorted keys)":          RegistryAuth(u, pw, "127.0.0.1:5000"),
		"X-Registry-Auth (docker CLI, username)": base64.URLEncoding.EncodeToString(sdk),
	} {
		if !strings.Contains(hdr, secrets[what]) {
			t.Fatalf("%s: prefix %q does not match a real header %q", what, secrets[what], hdr)
		}
	}
	tokens := []*regexp.Regexp{jwtPattern, refreshPattern}
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
			continue
		}
		log := string(b)
		for what, s := range secrets {
			if i := strings.Index(log, s); i >= 0 {
				t.Errorf("%s holds the %s: …%s…", p, what, excerpt(log, i, len(s)))
			}
		}
		for _, re := range tokens {
			if loc := re.FindStringIndex(log); loc != nil {
				t.Errorf("%s holds a token (%s): …%s…", p, re, excerpt(log, loc[0], loc[1]-loc[0]))
			}
		}
	}
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

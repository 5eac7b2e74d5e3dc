package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/wharfproject/wharf/api/types"
)

// authRecorder is a store whose check records the credentials it was
// given and answers with results.
type authRecorder struct {
	got     []map[string]string // per round: key → username
	skipped []bool              // per round: whether the results' registry was skipped
	results []types.RemoteCheckResult
}

func (a *authRecorder) CheckRemoteSkipping(_ context.Context, opts types.RemoteCheckOptions, skip func(string) bool, emit func(types.RemoteCheckResult) error) error {
	m := map[string]string{}
	for k, v := range opts.Auth {
		m[k] = v.Username
	}
	a.got = append(a.got, m)
	a.skipped = append(a.skipped, skip("127.0.0.1:5000"))
	if skip("127.0.0.1:5000") {
		return nil
	}
	for _, r := range a.results {
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

// TestWatchRoundUsesAuthFileAndSaysWhyOnce: a round hands the auth file's
// sets to the check (a SetAuth applies from the next round); tags it
// could not check are one warning line per round, whatever their number,
// saying whether credentials were presented, and never a secret.
func TestWatchRoundUsesAuthFileAndSaysWhyOnce(t *testing.T) {
	logger, hook := logtest.NewNullLogger()
	st := &authRecorder{}
	for _, tag := range []string{"1", "2", "3"} {
		r := res(tag, types.RemoteError, "")
		r.RemoteError = "unauthorized: authentication required"
		st.results = append(st.results, r)
	}
	evs := NewEvents()
	w := newWatcher(st, evs, nil, 0, logrus.NewEntry(logger))
	warnings := func() []string {
		var out []string
		for _, e := range hook.AllEntries() {
			if e.Level == logrus.WarnLevel {
				out = append(out, e.Message+" "+fmt.Sprint(e.Data))
			}
		}
		hook.Reset()
		return out
	}

	w.Round(context.Background(), 0)
	if len(st.got[0]) != 0 {
		t.Fatalf("no file, yet credentials %v", st.got[0])
	}
	ws := warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "127.0.0.1:5000: 3 tags, asked anonymously (no check-remote-auth-file)") {
		t.Fatalf("warnings %q", ws)
	}

	other, err := parseAuthFile([]byte(`{"auths":{"other.example":{"auth":"` + b64("o:s3cret") + `"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	w.SetAuth(watchAuth(other))
	w.Round(context.Background(), 0)
	ws = warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "asked anonymously (check-remote-auth-file has no credentials for it)") {
		t.Fatalf("warnings %q", ws)
	}

	mine, err := parseAuthFile([]byte(`{"auths":{"127.0.0.1:5000":{"auth":"` + b64("me:s3cret") + `"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	w.SetAuth(watchAuth(mine))
	w.Round(context.Background(), 0)
	if got := st.got[2]; len(got) != 1 || got["127.0.0.1:5000"] != "me" {
		t.Fatalf("credentials %v", got)
	}
	ws = warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "asked with the credentials of check-remote-auth-file") || strings.Contains(ws[0], "s3cret") {
		t.Fatalf("warnings %q", ws)
	}

	st.results = []types.RemoteCheckResult{res("1", types.RemoteCurrent, "sha256:aa")}
	w.Round(context.Background(), 0)
	if ws := warnings(); len(ws) != 0 {
		t.Fatalf("a clean round warned: %q", ws)
	}
	if slices.Contains(st.skipped, true) {
		t.Fatalf("skipped: %v", st.skipped)
	}

	// A helper that fails: its registry is skipped (not asked
	// anonymously), its tags keep their state, one warning without the
	// helper's output.
	st.results = []types.RemoteCheckResult{res("1", types.RemoteOutdated, "sha256:bb")}
	w.Round(context.Background(), 0)
	if got := actions(evs); !slices.Equal(got, []string{"outdated 127.0.0.1:5000/app:1"}) {
		t.Fatalf("events %v", got)
	}
	warnings()
	fakeHelper(t, "failing", "echo leaked-secret; exit 4\n")
	helped, err := parseAuthFile([]byte(`{"credHelpers":{"127.0.0.1:5000":"failing"}}`))
	if err != nil {
		t.Fatal(err)
	}
	w.SetAuth(watchAuth(helped))
	st.results = []types.RemoteCheckResult{res("1", types.RemoteCurrent, "sha256:aa")}
	w.Round(context.Background(), 0)
	if !st.skipped[len(st.skipped)-1] {
		t.Fatal("the registry of a failed helper was asked")
	}
	if got := actions(evs); len(got) != 1 {
		t.Fatalf("a skipped registry's tag changed: %v", got)
	}
	if s := w.Sample(); len(s.Registries) != 1 || s.Registries[0].Outdated != 1 {
		t.Fatalf("the skipped registry's state was forgotten: %+v", s)
	}
	ws = warnings()
	if len(ws) != 1 || !strings.Contains(ws[0], "credential helper failed") || strings.Contains(ws[0], "leaked-secret") {
		t.Fatalf("warnings %q", ws)
	}
}

// res is a result of the check for 127.0.0.1:5000/app:<tag>.
func res(tag, status, remote string) types.RemoteCheckResult {
	return types.RemoteCheckResult{Repository: "127.0.0.1:5000/app", Tag: tag, ID: "sha256:1", LocalDigest: "sha256:aa", RemoteStatus: status, RemoteDigest: remote}
}

// actions lists the image events logged, as "action tag[/cleared]".
func actions(e *Events) []string {
	past, _, cancel := e.SubscribeEvents(time.Time{}, time.Time{}, types.Filters{"type": {"image": true}})
	cancel()
	var out []string
	for _, ev := range past {
		s := string(ev.Action) + " " + ev.Actor.Attributes["name"]
		if c := ev.Actor.Attributes["cleared"]; c != "" {
			s += "/" + c
		}
		out = append(out, s)
	}
	return out
}

package updates

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/wharfproject/wharf/api/types"
)

const (
	dgA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dgB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// TestWatchStateRoundTrip: what is saved loads back the same; tags without
// an alarm are left out (they mean what no entry means); the file is 0600.
func TestWatchStateRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state map[string]tagState
		want  map[string]tagState // nil: state
	}{
		{name: "empty", state: map[string]tagState{}},
		{name: "every alarm", state: map[string]tagState{
			"127.0.0.1:5000/app:latest": {registry: "127.0.0.1:5000", outdated: true, remoteDigest: dgA},
			"127.0.0.1:5000/ver:1.0":    {registry: "127.0.0.1:5000", newer: ",1.1,"},
			"busybox:1":                 {registry: "docker.io", baseOutdated: true, baseCurrent: dgB},
			"ghcr.io/o/r:v2-alpine":     {registry: "ghcr.io", outdated: true, remoteDigest: dgB, newer: "v2.0.1-alpine,v2.1-alpine,v3-alpine", baseOutdated: true, baseCurrent: dgA},
		}},
		{name: "no alarm left out",
			state: map[string]tagState{"a:1": {registry: "docker.io"}, "127.0.0.1:5000/b:2": {registry: "127.0.0.1:5000", outdated: true, remoteDigest: dgA}},
			want:  map[string]tagState{"127.0.0.1:5000/b:2": {registry: "127.0.0.1:5000", outdated: true, remoteDigest: dgA}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), StateFile)
			saved := time.Date(2026, 12, 4, 1, 2, 3, 0, time.UTC)
			if err := saveWatchState(path, tc.state, saved, "linux/amd64"); err != nil {
				t.Fatal(err)
			}
			got, info, err := loadWatchState(path)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = tc.state
			}
			if !maps.Equal(got, want) {
				t.Fatalf("loaded %+v, want %+v", got, want)
			}
			if !info.Saved.Equal(saved) || info.Platform != "linux/amd64" {
				t.Fatalf("info %+v", info)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v", fi.Mode())
			}
			if _, err := os.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("temp file left: %v", err)
			}
		})
	}
}

// validWatchState is a file of one outdated tag.
func validWatchState(t *testing.T) []byte {
	b, err := encodeWatchState(map[string]tagState{"127.0.0.1:5000/app:latest": {registry: "127.0.0.1:5000", outdated: true, remoteDigest: dgA}}, time.Unix(0, 0), "linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWatchStateIgnored: a file that is corrupt, truncated, too big, of an
// unknown version, or not a regular file is a warning and is ignored: the
// watch starts from nothing (its first round reports the alarm), and that
// round rewrites the file.
func TestWatchStateIgnored(t *testing.T) {
	valid := validWatchState(t)
	entry := func(name, body string) []byte {
		return []byte(`{"version":1,"saved":"2026-12-04T00:00:00Z","tags":{"` + name + `":` + body + `}}`)
	}
	for _, tc := range []struct {
		name string
		// data is the file's content; make, when set, makes the file.
		data []byte
		make func(t *testing.T, path string)
		want error
	}{
		{name: "not JSON", data: []byte("not json"), want: errWatchStateCorrupt},
		{name: "truncated", data: valid[:len(valid)/2], want: errWatchStateCorrupt},
		{name: "empty", data: []byte{}, want: errWatchStateCorrupt},
		{name: "no version", data: []byte(`{"tags":{}}`), want: errWatchStateCorrupt},
		{name: "unknown version", data: []byte(`{"version":2,"tags":"a later shape"}`), want: errWatchStateVersion},
		{name: "version 0", data: []byte(`{"version":0}`), want: errWatchStateVersion},
		{name: "data after the object", data: append(slices.Clone(valid), []byte("{}")...), want: errWatchStateCorrupt},
		{name: "unknown field", data: entry("127.0.0.1:5000/app:latest", `{"outdated":true,"remoteDigest":"`+dgA+`","extra":1}`), want: errWatchStateCorrupt},
		{name: "wrong type", data: entry("127.0.0.1:5000/app:latest", `{"outdated":"yes"}`), want: errWatchStateCorrupt},
		{name: "name not familiar", data: entry("docker.io/library/busybox:latest", `{"outdated":true}`), want: errWatchStateCorrupt},
		{name: "name without tag", data: entry("busybox", `{"outdated":true}`), want: errWatchStateCorrupt},
		{name: "name with digest", data: entry("busybox:1@"+dgA, `{"outdated":true}`), want: errWatchStateCorrupt},
		{name: "name invalid", data: entry("lower/UPPER:1", `{"outdated":true}`), want: errWatchStateCorrupt},
		{name: "bad digest", data: entry("busybox:1", `{"outdated":true,"remoteDigest":"sha256:zz"}`), want: errWatchStateCorrupt},
		{name: "digest without alarm", data: entry("busybox:1", `{"baseCurrent":"`+dgA+`"}`), want: errWatchStateCorrupt},
		{name: "newer not three", data: entry("busybox:1", `{"newer":"1.1"}`), want: errWatchStateCorrupt},
		{name: "newer not tags", data: entry("busybox:1", `{"newer":",1 1,"}`), want: errWatchStateCorrupt},
		{name: "oversized", make: func(t *testing.T, path string) {
			// Sparse: the size is read before anything else.
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(watchStateMax + 1); err != nil {
				t.Fatal(err)
			}
		}, want: errWatchStateTooBig},
		{name: "a directory", make: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, want: errWatchStateNotAFile},
		{name: "a FIFO", make: func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, want: errWatchStateNotAFile},
		{name: "a symlink", make: func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), "elsewhere")
			if err := os.WriteFile(other, valid, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		}, want: errWatchStateNotAFile},
		{name: "unreadable", make: func(t *testing.T, path string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads a 0000 file")
			}
			if err := os.WriteFile(path, valid, 0o000); err != nil {
				t.Fatal(err)
			}
		}, want: fs.ErrPermission},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), StateFile)
			if tc.make != nil {
				tc.make(t, path)
			} else if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := loadWatchState(path); !errors.Is(err, tc.want) {
				t.Fatalf("loadWatchState: %v, want %v", err, tc.want)
			}
			logger, hook := logtest.NewNullLogger()
			st := &scriptedStore{script: [][]types.RemoteCheckResult{{res("latest", "outdated", dgA)}}}
			ev := NewEvents()
			w := NewWatcher(st, ev, nil, time.Hour, logrus.NewEntry(logger))
			w.KeepStateIn(path, "linux/amd64")
			w.LoadState()
			var warned bool
			for _, e := range hook.AllEntries() {
				warned = warned || e.Level == logrus.WarnLevel && strings.Contains(e.Message, "ignoring the watch's saved state")
			}
			if !warned {
				t.Fatalf("no warning; log: %v", hook.AllEntries())
			}
			if s := w.Sample(); len(s.Registries) != 0 {
				t.Fatalf("state loaded from a file that was ignored: %+v", s)
			}
			w.Round(context.Background(), time.Hour)
			if got := actions(ev); !slices.Equal(got, []string{"outdated 127.0.0.1:5000/app:latest"}) {
				t.Fatalf("events %q: the watch did not start from nothing", got)
			}
			if tc.name == "a directory" {
				return // rename(2) does not replace a directory
			}
			got, _, err := loadWatchState(path)
			if err != nil || len(got) != 1 {
				t.Fatalf("after a round the file holds %+v (%v), want the outdated tag", got, err)
			}
		})
	}
}

// TestWatchStateDecodeCapsTheRead: the decoder reads at most
// watchStateMax+1 bytes, whatever the reader holds (the size check before
// it can be raced).
func TestWatchStateDecodeCapsTheRead(t *testing.T) {
	r := &countingZeros{}
	if _, _, err := decodeWatchState(r); !errors.Is(err, errWatchStateTooBig) {
		t.Fatalf("err %v", err)
	}
	if r.n > watchStateMax+1 {
		t.Fatalf("read %d bytes", r.n)
	}
}

// countingZeros is an endless reader of spaces (valid JSON whitespace)
// that counts what was read.
type countingZeros struct{ n int }

func (c *countingZeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	c.n += len(p)
	return len(p), nil
}

// TestWatchStateAcrossRestart: a watcher started on the file of an earlier
// one reports nothing for tags whose state is unchanged, counts them in
// its gauges before its first round, reports one event for a tag that
// moved meanwhile; a round that changes nothing does not write the file;
// a tag gone from the store leaves the file.
func TestWatchStateAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFile)
	v := func(r types.RemoteCheckResult, minor string) types.RemoteCheckResult {
		r.VersionTag, r.NewerMinor = yes(), minor
		return r
	}
	base := func(r types.RemoteCheckResult, cur string) types.RemoteCheckResult {
		r.BaseStatus, r.BaseCurrentDigest = types.BaseOutdated, cur
		return r
	}
	before := []types.RemoteCheckResult{res("latest", "outdated", dgA), v(res("1.0", "current", "sha256:aa"), "1.1"), base(res("b", "current", "sha256:aa"), dgB), res("ok", "current", "sha256:aa")}
	start := func(script ...[]types.RemoteCheckResult) (*Watcher, *recordedEvents) {
		ev := NewEvents()
		w := NewWatcher(&scriptedStore{script: script}, ev, nil, time.Hour, quietLog())
		w.KeepStateIn(path, "linux/amd64")
		w.LoadState()
		return w, ev
	}
	w, ev := start(before)
	w.Round(context.Background(), time.Hour)
	if got := actions(ev); len(got) != 3 {
		t.Fatalf("first run: events %q", got)
	}

	// A restart: nothing changed.
	moved := slices.Clone(before)
	moved[0] = res("latest", "outdated", dgB)
	w, ev = start(before, before, moved, moved[1:])
	s := w.Sample()
	if len(s.Registries) != 1 || s.Registries[0].Outdated != 1 || s.Registries[0].Newer != 1 || s.BaseOutdated != 1 {
		t.Fatalf("gauges before the first round after the restart: %+v", s)
	}
	w.Round(context.Background(), time.Hour)
	if got := actions(ev); len(got) != 0 {
		t.Fatalf("after a restart that changed nothing: events %q", got)
	}
	// A round that changes nothing writes nothing: the file removed
	// behind the watch stays removed.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w.Round(context.Background(), time.Hour)
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the file was written by a round that changed nothing: %v", err)
	}
	// The tag moves: one event, and the file is written.
	w.Round(context.Background(), time.Hour)
	if got := actions(ev); !slices.Equal(got, []string{"outdated 127.0.0.1:5000/app:latest"}) {
		t.Fatalf("after the tag moved: events %q", got)
	}
	saved, _, err := loadWatchState(path)
	if err != nil || saved["127.0.0.1:5000/app:latest"].remoteDigest != dgB || len(saved) != 3 {
		t.Fatalf("saved %+v (%v)", saved, err)
	}
	// The tag is removed from the store: it leaves the file.
	w.Round(context.Background(), time.Hour)
	saved, _, err = loadWatchState(path)
	if _, ok := saved["127.0.0.1:5000/app:latest"]; err != nil || ok || len(saved) != 2 {
		t.Fatalf("after the tag was removed: saved %+v (%v)", saved, err)
	}

	// A newer version appeared while stopped: one event after the start,
	// none for the base still outdated.
	w, ev = start([]types.RemoteCheckResult{v(res("1.0", "current", "sha256:aa"), "1.2"), base(res("b", "current", "sha256:aa"), dgB)})
	w.Round(context.Background(), time.Hour)
	w.Round(context.Background(), time.Hour)
	if got := actions(ev); !slices.Equal(got, []string{"newer-version 127.0.0.1:5000/app:1.0"}) {
		t.Fatalf("a newer version while stopped: events %q", got)
	}
}

// TestWatchStateLoadedAtFirstRound: with the watch off at start (no
// load), a SIGHUP that turns it on loads the file at the first round.
func TestWatchStateLoadedAtFirstRound(t *testing.T) {
	path := filepath.Join(t.TempDir(), StateFile)
	if err := os.WriteFile(path, validWatchState(t), 0o600); err != nil {
		t.Fatal(err)
	}
	ev := NewEvents()
	w := NewWatcher(&scriptedStore{script: [][]types.RemoteCheckResult{{res("latest", "outdated", dgA)}}}, ev, nil, 0, quietLog())
	w.KeepStateIn(path, "linux/arm64")
	w.Round(context.Background(), time.Hour)
	if got := actions(ev); len(got) != 0 {
		t.Fatalf("events %q: the file was not read before the first round", got)
	}
}

// TestWatchStateEntrySize measures the typical entry the 16 MiB cap is
// reasoned from (watchStateMax): 165 bytes.
func TestWatchStateEntrySize(t *testing.T) {
	const n = 1000
	state := map[string]tagState{}
	for i := range n {
		// ~40-byte names, a digest, one newer tag
		state[fmt.Sprintf("registry.example.com/team/app%d:1.2.%d", i, i%10)] = tagState{outdated: true, remoteDigest: dgA, newer: ",1.3.0,"}
	}
	b, err := encodeWatchState(state, time.Now(), "linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	per := len(b) / len(state)
	t.Logf("%d entries, %d bytes, %d a tag; the cap holds %d", len(state), len(b), per, watchStateMax/per)
	if per < 100 || per > 250 {
		t.Fatalf("%d bytes an entry: revisit watchStateMax's comment", per)
	}
}

// FuzzWatchStateFile: the data-root can be tampered with, so the file is
// outside input. Whatever it holds, decoding does not panic, and what
// loads saves back to the same state (and the same bytes).
func FuzzWatchStateFile(f *testing.F) {
	good, _ := encodeWatchState(map[string]tagState{
		"127.0.0.1:5000/app:latest": {registry: "127.0.0.1:5000", outdated: true, remoteDigest: dgA},
		"busybox:1":                 {registry: "docker.io", newer: "1.0.1,,2", baseOutdated: true, baseCurrent: dgB},
	}, time.Unix(1, 0), "linux/amd64")
	for _, s := range [][]byte{
		good, good[:len(good)/2], []byte(`{"version":1}`), []byte(`{"version":1,"tags":null}`),
		[]byte(`{"version":1,"tags":{"a:1":{}}}`), []byte(`{"version":2}`), []byte(`{"version":1}{}`),
		[]byte(`{"version":1,"tags":{"a:1":{"outdated":true},"a:1":{"newer":"1,,"}}}`),
		[]byte(`{"version":1e400}`), []byte(`[]`), []byte(`null`),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, _, err := decodeWatchState(bytes.NewReader(data))
		if err != nil {
			if st != nil {
				t.Fatalf("a state with an error: %+v", st)
			}
			return
		}
		for name, s := range st {
			if !s.alarm() || s.registry == "" {
				t.Fatalf("%q loaded as %+v", name, s)
			}
		}
		saved := time.Unix(2, 0)
		b, err := encodeWatchState(st, saved, "linux/amd64")
		if err != nil {
			t.Fatalf("what loaded does not save: %v", err)
		}
		again, _, err := decodeWatchState(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("what saved does not load: %v\n%s", err, b)
		}
		if !maps.Equal(st, again) {
			t.Fatalf("loaded %+v, saved and loaded again %+v", st, again)
		}
		b2, err := encodeWatchState(again, saved, "linux/amd64")
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("saved twice differently (%v):\n%s\n%s", err, b, b2)
		}
	})
}

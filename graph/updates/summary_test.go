package updates

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/wharfproject/wharf/api/types"
)

func bp(b bool) *bool { return &b }

func TestSummarize(t *testing.T) {
	full := &types.ImageDiff{
		Pull:  &types.PullCost{Layers: []types.DiffLayer{{Digest: "sha256:b", Size: 100}}, Bytes: 130, ConfigSize: 30, Present: 2},
		Files: &types.FilesDiff{Changes: []types.FileChange{{Path: "/etc/app.conf", Change: "changed"}, {Path: "/usr/bin/new", Change: "added"}}, LayersIndexed: 1},
		Packages: &types.PackagesDiff{
			Added:      []types.Package{{Name: "jq", Version: "1.7", Type: types.PackageTypeDeb}},
			Removed:    []types.Package{{Name: "wget", Version: "1.21", Type: types.PackageTypeDeb}},
			Upgraded:   []types.PackageChange{{Name: "zlib", Type: types.PackageTypeDeb, From: "1.2", To: "1.3"}, {Name: "curl", Type: types.PackageTypeDeb, From: "8.5.0-1", To: "8.6.0-1"}},
			Downgraded: []types.PackageChange{{Name: "app", Type: types.PackageTypeGoModule, From: "v2", To: "v1"}},
		},
		Source: &types.SourceDiff{FromRevision: "a", ToRevision: "b", CompareURL: "https://example.com/o/r/compare/a...b"},
		Signer: &types.SignerDiff{From: &types.Trust{}, To: &types.Trust{}, FromIdentity: "x", ToIdentity: "y", Same: false},
	}
	for _, tc := range []struct {
		name string
		in   *types.ImageDiff
		want types.DiffSummary
	}{
		{"nil", nil, types.DiffSummary{Error: "no diff"}},
		{"every section", full, types.DiffSummary{
			PackagesChanged: []types.PackageChange{
				{Name: "curl", Type: types.PackageTypeDeb, From: "8.5.0-1", To: "8.6.0-1"},
				{Name: "zlib", Type: types.PackageTypeDeb, From: "1.2", To: "1.3"},
				{Name: "app", Type: types.PackageTypeGoModule, From: "v2", To: "v1"},
			},
			PackagesAdded: []string{"jq@1.7"}, PackagesRemoved: []string{"wget@1.21"}, PackageChanges: 5,
			PullBytes: 130, PullLayers: 1, FilesChanged: 2,
			CompareURL: "https://example.com/o/r/compare/a...b", SameSigner: bp(false),
		}},
		{"the same image: empty sections", &types.ImageDiff{Pull: &types.PullCost{}, Files: &types.FilesDiff{}, Packages: &types.PackagesDiff{}, Source: &types.SourceDiff{}, Signer: &types.SignerDiff{Same: true}},
			types.DiffSummary{}},
		{"signer verdicts on both sides, same", &types.ImageDiff{Pull: &types.PullCost{}, Files: &types.FilesDiff{}, Packages: &types.PackagesDiff{}, Signer: &types.SignerDiff{From: &types.Trust{}, To: &types.Trust{}, Same: true}},
			types.DiffSummary{SameSigner: bp(true)}},
		{"sections missing are named", &types.ImageDiff{Pull: &types.PullCost{Bytes: 7, Layers: []types.DiffLayer{{Digest: "sha256:c", Size: 7}}}},
			types.DiffSummary{PullBytes: 7, PullLayers: 1, Error: "not built: files, packages"}},
		{"with the diff's reasons", &types.ImageDiff{Pull: &types.PullCost{}, Files: &types.FilesDiff{}, Errors: map[string]string{"packages": "layer unreadable"}},
			types.DiffSummary{Error: "packages: layer unreadable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestSummarizeCutsLongLists(t *testing.T) {
	d := &types.ImageDiff{Pull: &types.PullCost{}, Files: &types.FilesDiff{}, Packages: &types.PackagesDiff{}}
	for i := range maxSummaryPackages + 10 {
		d.Packages.Added = append(d.Packages.Added, types.Package{Name: fmt.Sprintf("p%05d", i), Version: "1"})
	}
	s := Summarize(d)
	if len(s.PackagesAdded) != maxSummaryPackages || !s.Truncated || s.PackageChanges != maxSummaryPackages+10 {
		t.Errorf("%d added, truncated %v, count %d", len(s.PackagesAdded), s.Truncated, s.PackageChanges)
	}
}

func TestSummaryTarget(t *testing.T) {
	r := func(status string, changed *bool, newer ...string) types.RemoteCheckResult {
		out := types.RemoteCheckResult{Repository: "127.0.0.1:5000/app", Tag: "1.0", RemoteStatus: status, PlatformChanged: changed}
		if len(newer) > 0 {
			out.NewerPatch = newer[0]
		}
		if len(newer) > 1 {
			out.NewerMinor = newer[1]
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   types.RemoteCheckResult
		want string
	}{
		{"outdated: the tag now", r(types.RemoteOutdated, nil, "1.0.1"), "127.0.0.1:5000/app:1.0"},
		{"outdated, platform changed", r(types.RemoteOutdated, bp(true)), "127.0.0.1:5000/app:1.0"},
		{"only other platforms moved: the newer version", r(types.RemoteOutdated, bp(false), "1.0.1"), "127.0.0.1:5000/app:1.0.1"},
		{"only other platforms moved, nothing newer", r(types.RemoteOutdated, bp(false)), ""},
		{"current with newer: the lowest", r(types.RemoteCurrent, nil, "1.0.1", "1.1.0"), "127.0.0.1:5000/app:1.0.1"},
		{"current", r(types.RemoteCurrent, nil), ""},
		{"error", r(types.RemoteError, nil, "1.0.1"), ""},
		{"local only", r(types.RemoteLocal, nil), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summaryTarget(tc.in); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

// fakeDiffer answers every diff with diff (or err) and keeps the requests.
type fakeDiffer struct {
	mu   sync.Mutex
	reqs []types.DiffRequest
	diff *types.ImageDiff
	err  error
}

func (f *fakeDiffer) ImageDiff(_ context.Context, req types.DiffRequest) (*types.ImageDiff, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	return f.diff, f.err
}

func oneDiff() *types.ImageDiff {
	return &types.ImageDiff{
		Pull:     &types.PullCost{Layers: []types.DiffLayer{{Digest: "sha256:b", Size: 1000}}, Bytes: 1200},
		Files:    &types.FilesDiff{Changes: []types.FileChange{{Path: "/etc/version", Change: "changed"}}},
		Packages: &types.PackagesDiff{Upgraded: []types.PackageChange{{Name: "libfoo", Type: types.PackageTypeDeb, From: "1.0-1", To: "1.0-2"}}},
		Source:   &types.SourceDiff{},
		Signer:   &types.SignerDiff{},
	}
}

func TestSummarizeRequest(t *testing.T) {
	f := &fakeDiffer{diff: oneDiff()}
	r := types.RemoteCheckResult{Repository: "127.0.0.1:5000/app", Tag: "1.0", RemoteStatus: types.RemoteOutdated, Platform: "linux/arm64/v8"}
	s := summarize(context.Background(), f, r, "127.0.0.1:5000/app:1.0", nil, nil)
	if len(f.reqs) != 1 {
		t.Fatalf("%d diffs", len(f.reqs))
	}
	q := f.reqs[0]
	if q.From != (types.DiffSide{Kind: types.SideLocal, Name: "127.0.0.1:5000/app:1.0"}) || q.To != (types.DiffSide{Kind: types.SideRemote, Name: "127.0.0.1:5000/app:1.0"}) {
		t.Errorf("sides %+v %+v", q.From, q.To)
	}
	if q.Platform == nil || q.Platform.OS != "linux" || q.Platform.Architecture != "arm64" {
		t.Errorf("platform %+v", q.Platform)
	}
	if q.Registries == nil || q.Auth != nil {
		t.Errorf("credentials: a check without sets must ask anonymously everywhere: %+v %+v", q.Registries, q.Auth)
	}
	if !reflect.DeepEqual(q.Sections, summarySections) {
		t.Errorf("sections %v", q.Sections)
	}
	if s.To != "127.0.0.1:5000/app:1.0" || s.PullBytes != 1200 || s.FilesChanged != 1 || len(s.PackagesChanged) != 1 || s.Error != "" {
		t.Errorf("summary %+v", s)
	}

	f = &fakeDiffer{err: fmt.Errorf("diff: %w", errdefs.ErrNotImplemented)}
	s = summarize(context.Background(), f, r, "127.0.0.1:5000/app:1.0", nil, nil)
	if s.Error == "" || s.To == "" {
		t.Errorf("a failed diff: %+v", s)
	}
}

func TestSummaryAttrs(t *testing.T) {
	s := Summarize(oneDiff())
	s.To = "127.0.0.1:5000/app:1.0"
	s.SameSigner = bp(true)
	a := map[string]string{}
	summaryAttrs(a, &s)
	want := map[string]string{
		"diff.to": "127.0.0.1:5000/app:1.0", "packages.changed": "libfoo 1.0-1→1.0-2", "packages.count": "1",
		"pull.bytes": "1200", "pull.layers": "1", "files.changed": "1", "signer.same": "true",
	}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("%s = %q, want %q", k, a[k], v)
		}
	}
	var back types.DiffSummary
	if err := json.Unmarshal([]byte(a["wharf.diff"]), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("wharf.diff read back %+v, want %+v", back, s)
	}
	none := map[string]string{"name": "x"}
	summaryAttrs(none, nil)
	if len(none) != 1 {
		t.Errorf("nil summary added %v", none)
	}
}

func TestSummaryAttrsCapped(t *testing.T) {
	var s types.DiffSummary
	for i := range 3000 {
		s.PackagesChanged = append(s.PackagesChanged, types.PackageChange{Name: fmt.Sprintf("package-%04d", i), Type: "deb", From: "1.0.0-1", To: "1.0.0-2"})
	}
	s.PackagesAdded = []string{strings.Repeat("x", 10<<10)}
	a := map[string]string{}
	summaryAttrs(a, &s)
	if n := len(a["wharf.diff"]); n == 0 || n > maxDiffAttr {
		t.Errorf("wharf.diff is %d bytes", n)
	}
	var back types.DiffSummary
	if err := json.Unmarshal([]byte(a["wharf.diff"]), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Truncated || back.PackageChanges != 3001 {
		t.Errorf("truncated %v, count %d", back.Truncated, back.PackageChanges)
	}
	if p := a["packages.changed"]; len(p) > maxPackagesAttr || !strings.HasSuffix(p, ", …") || !strings.HasPrefix(p, "package-0000 1.0.0-1→1.0.0-2, ") {
		t.Errorf("packages.changed: %d bytes, %.60q … %q", len(p), p, p[max(0, len(p)-20):])
	}
	if a["packages.count"] != "3001" {
		t.Errorf("packages.count %q", a["packages.count"])
	}
	// One name longer than the attribute: no list, no cut name.
	long := types.DiffSummary{PackagesAdded: []string{strings.Repeat("y", 2*maxPackagesAttr)}}
	b := map[string]string{}
	summaryAttrs(b, &long)
	if b["packages.changed"] != "…" {
		t.Errorf("packages.changed of one huge name: %.40q", b["packages.changed"])
	}
}

// The watch builds a summary for the events of a change only: a round
// that changes nothing builds none, and an outdated and a newer-version
// change each carry their own.
func TestWatchSummariesOnlyOnChange(t *testing.T) {
	v := func(r types.RemoteCheckResult, patch string) types.RemoteCheckResult {
		r.VersionTag, r.NewerPatch = yes(), patch
		return r
	}
	st := &scriptedStore{script: [][]types.RemoteCheckResult{
		{v(res("1.0", types.RemoteOutdated, "sha256:b1"), "1.0.1"), res("2.0", types.RemoteCurrent, "sha256:aa")},
		{v(res("1.0", types.RemoteOutdated, "sha256:b1"), "1.0.1"), res("2.0", types.RemoteCurrent, "sha256:aa")},
		{v(res("1.0", types.RemoteOutdated, "sha256:b2"), "1.0.1"), res("2.0", types.RemoteCurrent, "sha256:aa")},
	}}
	ev := NewEvents()
	f := &fakeDiffer{diff: oneDiff()}
	w := NewWatcher(st, ev, nil, time.Hour, quietLog())
	w.DiffWith(f)
	ctx := context.Background()

	w.Round(ctx, time.Hour)
	if len(f.reqs) != 2 {
		t.Fatalf("first round: %d diffs, want 2 (outdated, newer-version)", len(f.reqs))
	}
	tos := []string{f.reqs[0].To.Name, f.reqs[1].To.Name}
	if !reflect.DeepEqual(tos, []string{"127.0.0.1:5000/app:1.0", "127.0.0.1:5000/app:1.0.1"}) {
		t.Errorf("compared with %v", tos)
	}
	for _, e := range ev.list {
		if e.action != ActionOutdated && e.action != ActionNewerVersion {
			continue
		}
		if e.attrs["packages.changed"] != "libfoo 1.0-1→1.0-2" || e.attrs["pull.bytes"] != "1200" || e.attrs["wharf.diff"] == "" {
			t.Errorf("%s event attrs %v", e.action, e.attrs)
		}
	}

	w.Round(ctx, time.Hour)
	if len(f.reqs) != 2 {
		t.Errorf("a quiet round built %d diffs", len(f.reqs)-2)
	}

	w.Round(ctx, time.Hour)
	if len(f.reqs) != 3 || f.reqs[2].To.Name != "127.0.0.1:5000/app:1.0" {
		t.Errorf("the tag moved again: %d diffs", len(f.reqs))
	}
	if got := actions(ev); !reflect.DeepEqual(got, []string{"outdated 127.0.0.1:5000/app:1.0", "newer-version 127.0.0.1:5000/app:1.0", "outdated 127.0.0.1:5000/app:1.0"}) {
		t.Errorf("events %v", got)
	}
}

// A round of many changes builds watchMaxDiffs summaries; the others'
// events say why they carry none.
func TestWatchSummariesCapped(t *testing.T) {
	var round []types.RemoteCheckResult
	for i := range watchMaxDiffs + 4 {
		round = append(round, res(fmt.Sprintf("t%02d", i), types.RemoteOutdated, "sha256:bb"))
	}
	st := &scriptedStore{script: [][]types.RemoteCheckResult{round}}
	ev := NewEvents()
	f := &fakeDiffer{diff: oneDiff()}
	w := NewWatcher(st, ev, nil, time.Hour, quietLog())
	w.DiffWith(f)
	w.Round(context.Background(), time.Hour)
	if len(f.reqs) != watchMaxDiffs {
		t.Errorf("%d diffs, want %d", len(f.reqs), watchMaxDiffs)
	}
	var withErr int
	for _, e := range ev.list {
		if e.attrs["diff.error"] != "" && e.attrs["wharf.diff"] != "" {
			withErr++
		}
	}
	if len(ev.list) != watchMaxDiffs+4 || withErr != 4 {
		t.Errorf("%d events, %d with diff.error", len(ev.list), withErr)
	}
}

// Without a differ the events are as before: no summary attributes.
func TestWatchWithoutDiffer(t *testing.T) {
	st := &scriptedStore{script: [][]types.RemoteCheckResult{{res("1.0", types.RemoteOutdated, "sha256:bb")}}}
	ev := NewEvents()
	w := NewWatcher(st, ev, nil, time.Hour, quietLog())
	w.Round(context.Background(), time.Hour)
	if len(ev.list) != 1 || ev.list[0].attrs["wharf.diff"] != "" {
		t.Errorf("%+v", ev.list)
	}
}

// The check attaches a summary only when asked, only to a tag with
// something to compare, and says so when the daemon has no differ.
func TestAttachSummary(t *testing.T) {
	outdated := types.RemoteCheckResult{Repository: "127.0.0.1:5000/app", Tag: "1.0", RemoteStatus: types.RemoteOutdated}
	current := types.RemoteCheckResult{Repository: "127.0.0.1:5000/app", Tag: "2.0", RemoteStatus: types.RemoteCurrent}
	ctx := context.Background()
	f := &fakeDiffer{diff: oneDiff()}
	c := &Checker{differ: f}

	run := &checkRun{opts: types.RemoteCheckOptions{}, diffs: make(chan struct{}, maxConcurrentDiffs)}
	r := outdated
	c.attachSummary(ctx, run, &r)
	if r.Diff != nil || len(f.reqs) != 0 {
		t.Errorf("not asked: %+v, %d diffs", r.Diff, len(f.reqs))
	}

	run.opts.Diff = true
	r = current
	c.attachSummary(ctx, run, &r)
	if r.Diff != nil || len(f.reqs) != 0 {
		t.Errorf("current: %+v, %d diffs", r.Diff, len(f.reqs))
	}
	r = outdated
	c.attachSummary(ctx, run, &r)
	if r.Diff == nil || r.Diff.PullBytes != 1200 || len(f.reqs) != 1 {
		t.Errorf("outdated: %+v, %d diffs", r.Diff, len(f.reqs))
	}

	r = outdated
	(&Checker{}).attachSummary(ctx, run, &r)
	if r.Diff == nil || r.Diff.Error == "" || r.Diff.To != "127.0.0.1:5000/app:1.0" {
		t.Errorf("no differ: %+v", r.Diff)
	}
}

func TestSummaryRemoteSideIsQualified(t *testing.T) {
	f := &fakeDiffer{diff: oneDiff()}
	r := types.RemoteCheckResult{Repository: "busybox", Tag: "1.36", RemoteStatus: types.RemoteOutdated}
	s := summarize(context.Background(), f, r, summaryTarget(r), nil, nil)
	if got := f.reqs[0].To.Name; got != "docker.io/library/busybox:1.36" {
		t.Errorf("remote side %q", got)
	}
	if s.To != "busybox:1.36" {
		t.Errorf("To %q: the familiar name, as the events name tags", s.To)
	}
}

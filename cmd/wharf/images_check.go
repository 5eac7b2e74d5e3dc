package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/moby/moby/api/types/image"
	"github.com/spf13/pflag"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
)

// `wharf images --check-remote [NAME…]`: the update check.
// The list is the ordinary `images` list (NAME… are its reference
// filters); the daemon checks each tagged row against its registry
// (POST /wharf/images/check-remote) and each row gets the answer: a REMOTE
// column in the table, RemoteStatus/RemoteDigest/RemoteError with
// --format json. Progress goes to stderr when it is a terminal; stdout
// carries only the list.

// Exit status with --exit-code (without it: 0 unless the command fails).
const (
	exitOutdated    = 1 // some image is outdated or missing, has a newer version (--newer) or a moved base (--base)
	exitCheckFailed = 2 // none of those, but some could not be checked (digest, tag listing or base)
)

type checkRemoteFlags struct {
	enabled, exitCode bool
	newer, base, diff bool
	baseName          string
	maxAge            time.Duration
}

func (f *checkRemoteFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&f.enabled, "check-remote", false, "Check each tagged image against its registry (adds a REMOTE column: current, outdated, missing, local or error)")
	fl.BoolVar(&f.exitCode, "exit-code", false, "With --check-remote: exit 1 when any image is outdated or missing, has a newer version (--newer) or a base that moved (--base), else 2 when any could not be checked")
	fl.BoolVar(&f.newer, "newer", false, "With --check-remote: add the newer versions of each version tag, of the same shape, per level (a NEWER column: patch, minor, major)")
	fl.BoolVar(&f.base, "base", false, "With --check-remote: check the base of each image that names it (org.opencontainers.image.base.name/.digest; a BASE column: current, outdated or unknown)")
	fl.BoolVar(&f.diff, "diff", false, "With --check-remote: for each outdated image, or one with a newer version (--newer), what changed (a CHANGES column: packages with versions, files changed in the layers that differ, bytes to pull, a changed signer, the compare link); one diff per such image")
	fl.StringVar(&f.baseName, "base-name", "", "With --check-remote: the base (REF) of the images that name none, compared by layer prefix (implies --base)")
	fl.DurationVar(&f.maxAge, "max-age", 0, "With --check-remote: accept a registry answer the daemon got within this duration, without asking again (default 0: always ask)")
}

func (f *checkRemoteFlags) validate() error {
	if f.exitCode || f.maxAge != 0 || f.newer || f.base || f.baseName != "" || f.diff {
		return errors.New("--exit-code, --max-age, --newer, --base, --base-name and --diff need --check-remote")
	}
	return nil
}

func runImagesCheckRemote(ctx context.Context, c *cli, o imagesOptions, names []string) error {
	if o.check.maxAge < 0 {
		return errors.New("--max-age must not be negative")
	}
	if o.check.baseName != "" {
		o.check.base = true
	}
	f, err := parseFilterFlags(o.filters)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		f["reference"] = map[string]bool{}
		for _, n := range names {
			f["reference"][n] = true
		}
	}
	api, err := c.client()
	if err != nil {
		return err
	}
	list, err := api.ImageList(ctx, client.ImageListOptions{All: o.all, Filters: f})
	if err != nil {
		return err
	}
	tags := taggedRefs(list)
	// A registry whose helper fails is checked anonymously, with a warning.
	auth, _ := c.creds().RegistryConfig(ctx, tags, func(key string, err error) error {
		fmt.Fprintf(c.err, "warning: %v; checking %s anonymously\n", err, key)
		return nil
	})
	opts := client.CheckRemoteOptions{MaxAge: o.check.maxAge, Auth: auth, Newer: o.check.newer, Base: o.check.base, BaseName: o.check.baseName, Diff: o.check.diff}
	if len(f) > 0 {
		// Check exactly the rows shown (filters the daemon's check does
		// not take, such as label=, narrowed the list).
		opts.Names = tags
	}
	results := map[string]types.RemoteCheckResult{}
	if len(tags) > 0 {
		prog := newCheckProgress(c, len(tags))
		err = api.ImageCheckRemote(ctx, opts, func(r types.RemoteCheckResult) error {
			results[r.Repository+":"+r.Tag] = r
			prog.tick()
			return nil
		})
		prog.finish()
		if err != nil {
			return err
		}
	}
	if err := formatter.CheckedImages(c.out, list, o.table, o.check.newer, o.check.base, o.check.diff, results, time.Now()); err != nil {
		return err
	}
	return checkOutcome(c, results, o.check.exitCode)
}

// taggedRefs are the familiar repo:tag of every tagged image in list, sorted.
func taggedRefs(list []image.Summary) []string {
	seen := map[string]bool{}
	var out []string
	for _, img := range list {
		for _, t := range img.RepoTags {
			if !seen[t] && !strings.HasSuffix(t, ":<none>") {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// checkOutcome reports the checks that failed on stderr and, with
// --exit-code, turns the answers into the exit status.
func checkOutcome(c *cli, results map[string]types.RemoteCheckResult, exitCode bool) error {
	keys := make([]string, 0, len(results))
	for k := range results {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var stale, failed int
	for _, k := range keys {
		r := results[k]
		switch r.RemoteStatus {
		case types.RemoteOutdated, types.RemoteMissing:
			stale++
		case types.RemoteError:
			failed++
			fmt.Fprintf(c.err, "%s: %s\n", formatter.FamiliarTag(r), r.RemoteError)
		}
		// With --newer and --base (the fields are only there when asked):
		// a newer version or a moved base is something to act on, as an
		// outdated tag is; a listing or a base that could not be asked is
		// a check that failed.
		if len(r.NewerVersions()) > 0 || r.BaseOutdated() {
			stale++
		}
		if r.NewerError != "" && r.RemoteStatus != types.RemoteError {
			failed++
			fmt.Fprintf(c.err, "%s: newer versions: %s\n", formatter.FamiliarTag(r), r.NewerError)
		}
		if r.BaseStatus == types.BaseUnknown {
			failed++
			fmt.Fprintf(c.err, "%s: base %s: %s\n", formatter.FamiliarTag(r), r.BaseName, r.BaseError)
		}
		// A summary that could not be built (or only in part) is said,
		// and changes no exit status: the check itself answered.
		if d := r.Diff; d != nil && d.Error != "" {
			fmt.Fprintf(c.err, "%s: what changed (against %s): %s\n", formatter.FamiliarTag(r), d.To, d.Error)
		}
	}
	switch {
	case !exitCode:
		return nil
	case stale > 0:
		return &statusError{status: exitOutdated}
	case failed > 0:
		return &statusError{status: exitCheckFailed}
	}
	return nil
}

// checkProgress writes "checked N of M" on stderr when it is a terminal
// and the list is long enough to wait for.
type checkProgress struct {
	c           *cli
	total, done int
	on          bool
}

// minProgressImages: below this many tags the check ends before progress
// would be read.
const minProgressImages = 10

func newCheckProgress(c *cli, total int) *checkProgress {
	return &checkProgress{c: c, total: total, on: total >= minProgressImages && isTerminal(c.err)}
}

func (p *checkProgress) tick() {
	p.done++
	if p.on {
		fmt.Fprintf(p.c.err, "\rchecking remote tags: %d of %d", p.done, p.total)
	}
}

func (p *checkProgress) finish() {
	if p.on {
		fmt.Fprint(p.c.err, "\r\033[K")
	}
}

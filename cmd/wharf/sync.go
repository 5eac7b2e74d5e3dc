package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/registry"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
	"github.com/wharfproject/wharf/cmd/wharf/internal/syncyaml"
)

func newSyncCommand(c *cli) *cobra.Command {
	var (
		opts     client.SyncOptions
		failures string
		format   string
	)
	cmd := &cobra.Command{
		Use:   "sync [OPTIONS] SOURCE DEST",
		Short: "Mirror repositories from one registry to another, through the daemon, copying only what differs",
		Long: `Mirror repositories from one registry to another, through the daemon,
or across an air gap through an OCI image layout archive.

SOURCE is a repository (host/repo: every tag, host/repo:tag: that tag), a
namespace (host/ns: every repository the registry's catalog lists under it),
or a YAML file in skopeo sync's format. DEST is host[/path]: a repository
lands there under its last path element, or with --scoped under its source
host and whole path.

An image whose tag already names the same digest at DEST costs one HEAD on
each side; the others go through the one-image copy (wharf copy).

DEST oci-archive:FILE (oci-archive:- for stdout) writes every image selected
into one OCI image layout tar instead; SOURCE oci-archive:FILE (- for stdin)
pushes the images of such an archive to DEST.`,
		Args: requiresExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst := args[0], args[1]
			if format != "" && format != "json" && format != "text" {
				return fmt.Errorf("invalid --format %q: text or json", format)
			}
			if path, ok := strings.CutPrefix(src, "oci-archive:"); ok {
				return c.syncImport(cmd, path, dst, opts, failures, format)
			}
			if syncyaml.IsFile(src) {
				b, err := syncyaml.Read(src)
				if err != nil {
					return err
				}
				sources, warnings, err := syncyaml.Parse(b)
				for _, w := range warnings {
					fmt.Fprintln(c.err, "WARNING:", w)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", src, err)
				}
				opts.Sources = sources
			} else {
				opts.Sources = []client.SyncSource{{Repository: src}}
			}
			archive, toArchive := strings.CutPrefix(dst, "oci-archive:")
			if !toArchive {
				opts.Destination = dst
			}
			if opts.Platform != "" {
				if _, err := parsePlatform(opts.Platform); err != nil {
					return err
				}
			}
			// The stored credentials of every registry named, keyed by
			// registry: the daemon sends each set to its own registry only.
			var names []string
			if !toArchive {
				names = append(names, dst)
			}
			for _, s := range opts.Sources {
				names = append(names, s.Repository)
			}
			ctx := cmd.Context()
			auth, err := c.creds().RegistryConfig(ctx, names, nil)
			if err != nil {
				return err
			}
			api, err := c.client()
			if err != nil {
				return err
			}
			if toArchive {
				return c.syncExport(cmd, api, archive, opts, auth, failures)
			}
			sum, err := api.ImageSync(ctx, opts, auth, c.printSyncEvent(format))
			return c.syncDone(sum, err, failures, format, opts.DryRun, false, c.out)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Scoped, "scoped", false, "Keep the source host and whole repository path under DEST (as skopeo sync --scoped)")
	fl.StringVar(&opts.TagRegex, "tag-regex", "", "Sync only tags this regular expression matches (unanchored, RE2)")
	fl.StringVar(&opts.Semver, "semver", "", "Sync only version tags in this range (\">=1.2 <2\", \"~1.4\", \"^3\": skopeo's images-by-semver syntax)")
	fl.IntVar(&opts.Latest, "latest", 0, "Sync only the N highest versions (after the other filters)")
	fl.StringVar(&opts.Platform, "platform", "", "Sync only this platform of multi-platform images (default: every platform and the index)")
	fl.BoolVar(&opts.IncludeForeign, "include-foreign", false, "Copy foreign layers (those with urls) too")
	fl.BoolVar(&opts.WithReferrers, "with-referrers", false, "Copy what refers to each image copied (signatures, SBOMs: referrers API, tag schema, cosign tags)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "Print the plan (what would be copied, what is there already) and move nothing")
	fl.BoolVar(&opts.KeepGoing, "keep-going", false, "Record a failed image and go on (the exit status is still 1)")
	fl.StringVar(&failures, "failures", "", "Write the failures as JSON to this file ({\"failures\": [{image, step, class, message}]})")
	fl.Int64Var(&opts.RateLimitFloor, "rate-limit-floor", 0, "Pause a source registry whose rate limit says fewer than N requests remain, until its window passes")
	fl.StringVar(&opts.Backup, "backup", "", "Before a destination tag moves, keep what it named under this tag (a Go template: {{.Tag}}-backup-{{.Digest.Short}})")
	fl.StringVar(&format, "format", "", "Print the events as JSON lines (json), or as text (text, the default)")
	return cmd
}

// writeFailures writes the machine-readable list, replacing name
// atomically so that a reader never sees half of it.
func writeFailures(name string, fs []client.SyncFailure) error {
	if fs == nil {
		fs = []client.SyncFailure{}
	}
	b, err := json.MarshalIndent(struct {
		Failures []client.SyncFailure `json:"failures"`
	}{fs}, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename: nothing
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

// syncDone writes the failures file, prints the summary and gives the
// exit status: 1 when an image failed.
func (c *cli) syncDone(sum *client.SyncSummary, err error, failures, format string, dryRun, toArchive bool, out io.Writer) error {
	if failures != "" && sum != nil {
		if werr := writeFailures(failures, sum.Failures); werr != nil {
			return werr
		}
	}
	if err != nil {
		return err
	}
	if format != "json" {
		fmt.Fprintln(out, formatter.SyncSummary(sum, dryRun, toArchive))
	}
	if sum.Failed > 0 {
		return &statusError{status: 1, message: fmt.Sprintf("%d of %d images failed to sync", sum.Failed, sum.Images)}
	}
	return nil
}

// syncExport writes the archive to path (- for stdout: the summary then
// goes to stderr). A file is written beside its name and renamed once the
// daemon's summary says the archive is whole.
func (c *cli) syncExport(cmd *cobra.Command, api *client.Client, path string, opts client.SyncOptions, auth map[string]registry.AuthConfig, failures string) error {
	exp, err := api.ImageSyncExport(cmd.Context(), opts, auth)
	if err != nil {
		return err
	}
	defer exp.Body.Close()
	var w io.Writer = c.out
	var tmp *os.File
	if path != "-" {
		if path == "" {
			return errors.New("oci-archive: needs a file name, or - for stdout")
		}
		if tmp, err = os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*"); err != nil {
			return err
		}
		defer os.Remove(tmp.Name()) // after the rename: nothing
		defer tmp.Close()
		w = tmp
	} else if isTerminal(c.out) {
		return errors.New("refusing to write an archive to a terminal: redirect stdout or name a file")
	}
	if _, err := io.Copy(w, exp.Body); err != nil {
		return fmt.Errorf("the export broke off: %w", err)
	}
	sum, err := exp.Summary()
	if err == nil && tmp != nil && !opts.DryRun { // a dry run writes no archive
		if err = tmp.Close(); err == nil {
			err = os.Rename(tmp.Name(), path)
		}
	}
	return c.syncDone(sum, err, failures, "", opts.DryRun, true, c.err)
}

// syncImport pushes the archive at path (- for stdin) to dst.
func (c *cli) syncImport(cmd *cobra.Command, path, dst string, opts client.SyncOptions, failures, format string) error {
	var r io.Reader = c.in
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	opts.Destination = dst
	ctx := cmd.Context()
	auth, err := c.creds().RegistryConfig(ctx, []string{dst}, nil)
	if err != nil {
		return err
	}
	api, err := c.client()
	if err != nil {
		return err
	}
	sum, err := api.ImageSyncImport(ctx, r, opts, auth, c.printSyncEvent(format))
	return c.syncDone(sum, err, failures, format, opts.DryRun, false, c.out)
}

// printSyncEvent prints each event of a sync or an archive import as it
// arrives: the line as the daemon sent it with --format json, else one
// line per image (the summary is printed by syncDone).
func (c *cli) printSyncEvent(format string) func(client.SyncEvent) error {
	return func(ev client.SyncEvent) error {
		if format == "json" {
			b, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.out, "%s\n", b)
			return err
		}
		if ev.Summary == nil {
			fmt.Fprintln(c.out, formatter.SyncLine(ev))
		}
		return nil
	}
}

package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
)

func newPullCommand(c *cli) *cobra.Command {
	var (
		all, quiet, dryRun bool
		platform, format   string
	)
	cmd := &cobra.Command{
		Use:   "pull [OPTIONS] NAME[:TAG|@DIGEST]",
		Short: "Download an image from a registry",
		Args:  requiresExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := reference.ParseNormalizedNamed(args[0])
			if err != nil {
				return fmt.Errorf("invalid reference format: %s", args[0])
			}
			opts := client.PullOptions{}
			switch r := ref.(type) {
			case reference.Canonical:
				opts.Tag = r.Digest().String()
			case reference.NamedTagged:
				opts.Tag = r.Tag()
			}
			if dryRun && all {
				return errors.New("--dry-run and --all-tags cannot be used together")
			}
			if format != "" && !dryRun {
				return errors.New("--format needs --dry-run")
			}
			if ref, opts.Tag, err = c.defaultTag(ref, opts.Tag, all, quiet || dryRun); err != nil {
				return err
			}
			if opts.Platform, err = parsePlatform(platform); err != nil {
				return err
			}
			ctx := cmd.Context()
			api, err := c.client()
			if err != nil {
				return err
			}
			// The stored credentials of each registry the daemon may find
			// the name at, keyed by registry: each gets its own only.
			if opts.Registries, opts.Auth, err = c.creds().ForName(ctx, api, args[0]); err != nil {
				return err
			}
			// The repository as typed, not normalised: a short name is
			// searched through the daemon's add-registry list, as remote
			// inspect searches it ("app" is not "docker.io/library/app").
			name := ref.Name()
			if typed, perr := reference.Parse(args[0]); perr == nil {
				if n, ok := typed.(reference.Named); ok {
					name = n.Name()
				}
			}
			if dryRun {
				return runPullDryRun(ctx, c, api, typedRef(name, opts.Tag), opts.Platform, opts, format)
			}
			rc, err := api.ImagePull(ctx, name, opts)
			if err != nil {
				return err
			}
			defer rc.Close()
			if err := c.display(rc, c.progressOut(quiet), nil); err != nil {
				return err
			}
			fmt.Fprintln(c.out, ref.String())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&all, "all-tags", "a", false, "Download all tagged images in the repository")
	fl.BoolVarP(&quiet, "quiet", "q", false, "Suppress verbose output")
	fl.StringVar(&platform, "platform", "", "Set platform if server is multi-platform capable (os/arch[/variant])")
	fl.BoolVar(&dryRun, "dry-run", false, "Print the layers and bytes the pull would download, given what the store holds, without downloading them (the registry is asked for the manifest only)")
	fl.StringVar(&format, "format", "", "With --dry-run: 'table' (default), 'json', or a Go template applied to the answer")
	return cmd
}

// defaultTag applies docker's rule for pull and push: --all-tags takes no
// tag; without it, no tag means latest (said aloud unless quiet).
func (c *cli) defaultTag(ref reference.Named, tag string, all, quiet bool) (reference.Named, string, error) {
	if all {
		if tag != "" {
			return nil, "", errors.New("tag can't be used with --all-tags/-a")
		}
		return ref, "", nil
	}
	if tag != "" {
		return ref, tag, nil
	}
	if !quiet {
		fmt.Fprintln(c.out, "Using default tag: latest")
	}
	return reference.TagNameOnly(ref), "latest", nil
}

// typedRef is NAME:TAG, or NAME@DIGEST when tag is a digest: the name as
// typed (short names stay short for the daemon's search order).
func typedRef(name, tag string) string {
	if strings.Contains(tag, ":") {
		return name + "@" + tag
	}
	return name + ":" + tag
}

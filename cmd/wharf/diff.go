package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/creds"
	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
)

// The exit statuses of `wharf diff --exit-code`, as diff(1) and git diff
// give them: 0 the same, 1 different, 2 trouble.
const (
	exitDiffers   = 1
	exitDiffError = 2
)

type diffOptions struct {
	remote   bool
	platform string
	sections []string
	format   string
	exitCode bool
}

// newDiffCommand is `wharf diff A B`: what changed from image A to image
// B, without pulling either.
func newDiffCommand(c *cli) *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff [OPTIONS] IMAGE-A IMAGE-B",
		Short: "Show what changed between two images without pulling them",
		Long: "Compare two images by section: config, layers, pull (what a pull of IMAGE-B would download " +
			"given the local store), files (of the layers that differ only), packages, source (the " +
			"org.opencontainers.image.source and .revision labels, with a compare link) and signer. Each image is " +
			"local:NAME, remote:NAME, archive:PATH (an uncompressed docker-archive or OCI layout tar of one image on the " +
			"daemon's host, by absolute path), or a bare NAME (local, or remote with --remote). --sections picks sections. " +
			"--format json prints one JSON object, a key per section; another --format is a Go template over it. " +
			"--exit-code exits 1 when the images differ, 0 when they do not, 2 on trouble.",
		Example: `  wharf diff app:1.4 remote:registry.example.com/team/app:1.5
  wharf diff --remote --sections packages,pull registry.example.com/team/app:1.4 registry.example.com/team/app:1.5
  wharf diff --format '{{.Pull.Bytes}}' app:1.4 remote:registry.example.com/team/app:1.5`,
		Args:              requiresRangeArgs(2, 2),
		ValidArgsFunction: completeImageNames(c, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := runDiff(cmd.Context(), c, o, args[0], args[1])
			var se *statusError
			if err != nil && o.exitCode && !errors.As(err, &se) {
				return &statusError{status: exitDiffError, message: err.Error()}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.remote, "remote", "r", false, "Read bare names from their registry without pulling them")
	fl.StringVar(&o.platform, "platform", "", "Platform of multi-platform images (os/arch[/variant])")
	fl.StringSliceVar(&o.sections, "sections", nil, "Sections to build, comma-separated: "+strings.Join(types.DiffSections, ","))
	fl.StringVar(&o.format, "format", "", "Output format: 'table' (default), 'json', or a Go template")
	fl.BoolVar(&o.exitCode, "exit-code", false, "Exit 1 when the images differ, 0 when not, 2 on trouble")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"table", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("sections", cobra.FixedCompletions(types.DiffSections, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runDiff(ctx context.Context, c *cli, o diffOptions, a, b string) error {
	platform, err := parsePlatform(o.platform)
	if err != nil {
		return err
	}
	api, err := c.client()
	if err != nil {
		return err
	}
	opts := client.DiffOptions{Sections: o.sections, Remote: o.remote, Platform: platform}
	// Stored credentials for the registries either image is read from.
	var names []string
	for _, s := range []string{a, b} {
		if side, err := types.ParseDiffSide(s, o.remote); err == nil && side.Kind != types.SideArchive {
			names = append(names, side.Name)
		}
	}
	if opts.Registries, err = c.creds().SearchConfig(ctx, api, names, nil); err != nil {
		return err
	}
	if len(names) > 0 {
		opts.Auth = creds.OwnSet(opts.Registries, names[len(names)-1])
	}
	d, raw, err := api.ImageDiff(ctx, a, b, opts)
	if err != nil {
		return err
	}
	switch o.format {
	case "", "table":
		err = formatter.Diff(c.out, &d)
	case "json":
		_, err = c.out.Write(raw)
	default:
		err = formatter.Templated(c.out, o.format, []json.RawMessage{raw})
	}
	if err != nil {
		return err
	}
	if o.format == "" || o.format == "table" {
		for _, sec := range types.DiffSections {
			if msg, ok := d.Errors[sec]; ok {
				fmt.Fprintf(c.err, "diff: section %s: %s\n", sec, msg)
			}
		}
	}
	switch {
	case !o.exitCode:
		return nil
	case d.Differs():
		return &statusError{status: exitDiffers}
	case len(d.Errors) > 0:
		return &statusError{status: exitDiffError}
	}
	return nil
}

package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
)

func newPullCommand(c *cli) *cobra.Command {
	var (
		all, quiet bool
		platform   string
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
			if all && opts.Tag != "" {
				return errors.New("tag can't be used with --all-tags/-a")
			}
			if !all && opts.Tag == "" {
				ref = reference.TagNameOnly(ref)
				opts.Tag = "latest"
				if !quiet {
					fmt.Fprintln(c.out, "Using default tag: latest")
				}
			}
			if opts.Platform, err = parsePlatform(platform); err != nil {
				return err
			}
			ctx := cmd.Context()
			if opts.Auth, err = c.authFor(ctx, args[0]); err != nil {
				return err
			}
			api, err := c.client()
			if err != nil {
				return err
			}
			rc, err := api.ImagePull(ctx, ref.Name(), opts)
			if err != nil {
				return err
			}
			defer rc.Close()
			var out io.Writer = c.out
			if quiet {
				out = io.Discard
			}
			if err := c.display(rc, out, nil); err != nil {
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
	return cmd
}

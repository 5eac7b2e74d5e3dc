package main

import (
	"errors"
	"fmt"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/creds"
)

func newPushCommand(c *cli) *cobra.Command {
	var all, quiet bool
	var platform string
	cmd := &cobra.Command{
		Use:               "push [OPTIONS] NAME[:TAG]",
		Short:             "Upload an image to a registry",
		Args:              requiresExactArgs(1),
		ValidArgsFunction: completeImageNames(c, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := reference.ParseNormalizedNamed(args[0])
			if err != nil {
				return fmt.Errorf("invalid reference format: %s", args[0])
			}
			if _, ok := ref.(reference.Digested); ok {
				return errors.New("cannot push a digest reference")
			}
			opts := client.PushOptions{}
			if opts.Platform, err = parsePlatform(platform); err != nil {
				return err
			}
			if nt, ok := ref.(reference.NamedTagged); ok {
				opts.Tag = nt.Tag()
			}
			if ref, opts.Tag, err = c.defaultTag(ref, opts.Tag, all, quiet); err != nil {
				return err
			}
			ctx := cmd.Context()
			api, err := c.client()
			if err != nil {
				return err
			}
			// A push goes to the registry its name names (docker.io for a
			// short one): that registry's stored credentials, keyed by it.
			if opts.Registries, err = c.creds().SearchConfig(ctx, api, nil, []string{args[0]}); err != nil {
				return err
			}
			opts.Auth = creds.OwnSet(opts.Registries, args[0])
			rc, err := api.ImagePush(ctx, reference.FamiliarName(ref), opts)
			if err != nil {
				return err
			}
			defer rc.Close()
			if err := c.display(rc, c.progressOut(quiet), nil); err != nil {
				return err
			}
			if quiet {
				fmt.Fprintln(c.out, ref.String())
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&all, "all-tags", "a", false, "Push all tags of an image to the repository")
	cmd.Flags().StringVar(&platform, "platform", "", "Push only the given platform of a multi-platform image (os/arch[/variant]); default: the whole index when every platform is present")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "Suppress verbose output")
	return cmd
}

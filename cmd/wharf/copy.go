package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/client"
)

func newCopyCommand(c *cli) *cobra.Command {
	var (
		platform                                           string
		allPlatforms, includeForeign, withReferrers, quiet bool
	)
	cmd := &cobra.Command{
		Use:   "copy [OPTIONS] SRC DST",
		Short: "Copy an image from one registry to another, through the daemon, without storing it",
		Args:  requiresExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst := args[0], args[1]
			for _, n := range args {
				if _, err := reference.ParseNormalizedNamed(n); err != nil {
					return fmt.Errorf("invalid reference format: %s", n)
				}
			}
			if platform != "" && allPlatforms {
				return errors.New("--platform and --all-platforms exclude each other")
			}
			opts := client.CopyOptions{AllPlatforms: allPlatforms, IncludeForeign: includeForeign, WithReferrers: withReferrers}
			var err error
			if opts.Platform, err = parsePlatform(platform); err != nil {
				return err
			}
			ctx := cmd.Context()
			api, err := c.client()
			if err != nil {
				return err
			}
			// The stored credentials of each side, keyed by registry (SRC
			// is searched, DST is its registry's): the daemon sends each
			// set to its own registry only.
			if opts.Auth, err = c.creds().SearchConfig(ctx, api, []string{src}, []string{dst}); err != nil {
				return err
			}
			rc, err := api.ImageCopy(ctx, src, dst, opts)
			if err != nil {
				return err
			}
			defer rc.Close()
			var res client.CopyResult
			aux := func(m jsonstream.Message) {
				if m.Aux != nil {
					_ = json.Unmarshal(*m.Aux, &res)
				}
			}
			if err := c.display(rc, c.progressOut(quiet), aux); err != nil {
				return err
			}
			if res.Destination == "" {
				return errors.New("the daemon ended the copy without a result")
			}
			if quiet {
				fmt.Fprintln(c.out, res.Destination)
				return nil
			}
			fmt.Fprintf(c.out, "Copied %s to %s (%d blobs: %d existed, %d mounted, %d uploaded, %d foreign skipped)\n",
				res.Source, res.Destination, res.Blobs, res.Existed, res.Mounted, res.Uploaded, res.Skipped)
			if withReferrers {
				fmt.Fprintf(c.out, "Copied %d referrers\n", res.Referrers)
			}
			for _, v := range []struct {
				side string
				t    *types.Trust
			}{{"source", res.SourceTrust}, {"destination", res.DestinationTrust}} {
				if v.t != nil {
					fmt.Fprintf(c.out, "Signature policy at the %s: %s (scope %q, %s)\n", v.side, v.t.Decision, v.t.Scope, v.t.Requirement)
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&platform, "platform", "", "Copy only this platform of a multi-platform image (os/arch[/variant]); DST then holds the platform manifest's digest")
	fl.BoolVar(&allPlatforms, "all-platforms", false, "Copy every platform and the index itself, byte for byte (the default for a multi-platform SRC)")
	fl.BoolVar(&includeForeign, "include-foreign", false, "Copy foreign layers (those with urls) too")
	fl.BoolVar(&withReferrers, "with-referrers", false, "Copy, after the image, what refers to it (signatures, SBOMs, attestations: referrers API, tag schema, cosign tags)")
	fl.BoolVarP(&quiet, "quiet", "q", false, "Print only NAME[:TAG]@DIGEST written at DST")
	return cmd
}

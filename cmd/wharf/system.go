package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
)

// newSystemCommand is `wharf system`: the store check, prune and the
// index.json export.
func newSystemCommand(c *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "system COMMAND",
		Short: "Manage the wharf daemon's store",
	}
	cmd.AddCommand(newSystemCheckCommand(c), newSystemPruneCommand(c), newSystemExportIndexCommand(c))
	return cmd
}

func newSystemCheckCommand(c *cli) *cobra.Command {
	var quick, asJSON bool
	cmd := &cobra.Command{
		Use:   "check [OPTIONS]",
		Short: "Verify the image store (blobs, images, index.json, tags)",
		Long: "Verify the image store. Every image's manifest, config and layers must be present with the sizes " +
			"their descriptors give, index.json must match the image records, every tag must name an image, " +
			"and (unless --quick) every blob must hash to its digest. Problems are printed one a line; " +
			"the exit status is 1 when there is any.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.client()
			if err != nil {
				return err
			}
			rep, err := api.SystemCheck(cmd.Context(), !quick)
			if err != nil {
				return err
			}
			if asJSON {
				b, err := json.MarshalIndent(rep, "", "    ")
				if err != nil {
					return err
				}
				fmt.Fprintln(c.out, string(b))
			} else {
				for _, p := range rep.Problems {
					fmt.Fprintf(c.out, "%s: %s\n", p.Kind, p.Message)
				}
				what := "checked sizes of"
				if rep.Full {
					what = "verified"
				}
				fmt.Fprintf(c.err, "%s %d images and %d blobs: %d problem(s)\n", what, rep.Images, rep.Blobs, len(rep.Problems))
				if rep.PartialDownloads > 0 {
					fmt.Fprintf(c.err, "%d partial download(s) kept for the next pull: %d bytes\n", rep.PartialDownloads, rep.PartialBytes)
				}
				formatter.Scrub(c.err, rep.LastScrub)
			}
			if len(rep.Problems) > 0 {
				return &statusError{status: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "Check presence and sizes only; do not hash the blobs (what start-up does)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "Print the report as JSON")
	return cmd
}

func newSystemExportIndexCommand(c *cli) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "export-index [OPTIONS]",
		Short: "Write the data-root's index.json now, for OCI tools",
		Long: "Ask wharfd to bring its data-root's index.json (the OCI image layout's index) up to date with its " +
			"image records now, and print its path and number of entries. wharfd keeps the file at most about " +
			"a second behind on its own and complete once stopped; run this before an OCI tool " +
			"(skopeo copy oci:DATAROOT:TAG, crane push DATAROOT) reads the data-root of a running daemon.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.client()
			if err != nil {
				return err
			}
			rep, err := api.SystemExportIndex(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				b, err := json.MarshalIndent(rep, "", "    ")
				if err != nil {
					return err
				}
				fmt.Fprintln(c.out, string(b))
				return nil
			}
			fmt.Fprintf(c.out, "%s: %d entries\n", rep.Path, rep.Entries)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "Print the report as JSON")
	return cmd
}

func newSystemPruneCommand(c *cli) *cobra.Command {
	var all, force bool
	cmd := &cobra.Command{
		Use:   "prune [OPTIONS]",
		Short: "Remove dangling images and every blob no image uses",
		Long: "Remove dangling images (every image not in use by a tag with --all) and every blob that no image " +
			"and no operation in progress uses (orphans left by a crash or an interrupted pull or load), " +
			"and print the space reclaimed. Without --force it asks first, as docker system prune does.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !force {
				what := "all dangling images"
				if all {
					what = "all images without at least one tag"
				}
				fmt.Fprintf(c.out, "WARNING! This will remove:\n  - %s\n  - all blobs no image uses\n\nAre you sure you want to continue? [y/N] ", what)
				if !confirm(c.in) {
					return nil
				}
			}
			api, err := c.client()
			if err != nil {
				return err
			}
			f := types.Filters{"dangling": {"true": true}}
			if all {
				f = types.Filters{"dangling": {"false": true}}
			}
			rep, err := api.ImagesPrune(cmd.Context(), f)
			if err != nil {
				return err
			}
			if len(rep.ImagesDeleted) > 0 {
				fmt.Fprintln(c.out, "Deleted Images:")
				for _, d := range rep.ImagesDeleted {
					if d.Untagged != "" {
						fmt.Fprintln(c.out, "untagged: "+d.Untagged)
					}
					if d.Deleted != "" {
						fmt.Fprintln(c.out, "deleted: "+d.Deleted)
					}
				}
				fmt.Fprintln(c.out)
			}
			fmt.Fprintf(c.out, "Total reclaimed space: %s\n", formatter.HumanSize(int64(rep.SpaceReclaimed)))
			return nil
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "Remove all unused images, not just dangling ones")
	cmd.Flags().BoolVarP(&force, "force", "f", false, "Do not prompt for confirmation")
	return cmd
}

// confirm reads one line and reports whether it is y or yes.
func confirm(in io.Reader) bool {
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

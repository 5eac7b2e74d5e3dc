package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

// newSystemCommand is `wharf system`: the store check for now.
func newSystemCommand(c *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "system COMMAND",
		Short: "Manage the wharf daemon's store",
		Args:  noArgs,
	}
	cmd.AddCommand(newSystemCheckCommand(c))
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

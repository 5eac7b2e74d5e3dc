package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
)

func newRmiCommand(c *cli) *cobra.Command {
	var o client.ImageRemoveOptions
	var platforms []string
	cmd := &cobra.Command{
		Use:               "rmi [OPTIONS] IMAGE [IMAGE...]",
		Short:             "Remove one or more images",
		Args:              requiresMinArgs(1),
		ValidArgsFunction: completeImageNames(c, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.client()
			if err != nil {
				return err
			}
			if o.Platforms, err = parsePlatforms(platforms); err != nil {
				return err
			}
			var failures []string
			for _, name := range args {
				res, err := api.ImageRemove(cmd.Context(), name, o)
				if err != nil {
					failures = append(failures, err.Error())
					continue
				}
				for _, r := range res {
					if r.Untagged != "" {
						fmt.Fprintf(c.out, "Untagged: %s\n", r.Untagged)
					}
					if r.Deleted != "" {
						fmt.Fprintf(c.out, "Deleted: %s\n", r.Deleted)
					}
				}
			}
			if len(failures) > 0 {
				return &statusError{status: 1, message: strings.Join(failures, "\n")}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&o.Force, "force", "f", false, "Force removal of the image")
	cmd.Flags().BoolVar(&o.NoPrune, "no-prune", false, "Do not delete untagged parents")
	cmd.Flags().StringSliceVar(&platforms, "platform", nil, "Remove only the given platforms of a multi-platform image (os/arch[/variant]); the image stays while others remain")
	return cmd
}

package main

import (
	"fmt"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"
)

func newTagCommand(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:               "tag SOURCE_IMAGE[:TAG] TARGET_IMAGE[:TAG]",
		Short:             "Create a tag TARGET_IMAGE that refers to SOURCE_IMAGE",
		Args:              requiresExactArgs(2),
		ValidArgsFunction: completeImageNames(c, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := reference.ParseNormalizedNamed(args[1])
			if err != nil {
				return fmt.Errorf("invalid reference format: %s", args[1])
			}
			if _, ok := ref.(reference.Digested); ok {
				return fmt.Errorf("refusing to create a tag with a digest reference")
			}
			tag := "latest"
			if nt, ok := ref.(reference.NamedTagged); ok {
				tag = nt.Tag()
			}
			api, err := c.client()
			if err != nil {
				return err
			}
			return api.ImageTag(cmd.Context(), args[0], reference.FamiliarName(ref), tag)
		},
	}
}

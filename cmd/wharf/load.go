package main

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func newLoadCommand(c *cli) *cobra.Command {
	var (
		input     string
		quiet     bool
		platforms []string
	)
	cmd := &cobra.Command{
		Use:   "load [OPTIONS]",
		Short: "Load an image from a tar archive or STDIN",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var in io.Reader = c.in
			if input != "" {
				f, err := os.Open(input)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			} else if isTerminal(c.in) {
				return errors.New("requested load from stdin, but stdin is empty")
			}
			api, err := c.client()
			if err != nil {
				return err
			}
			// As the docker CLI: progress only when someone watches it.
			ps, err := parsePlatforms(platforms)
			if err != nil {
				return err
			}
			rc, err := api.ImageLoadPlatforms(cmd.Context(), in, quiet || !isTerminal(c.out), ps)
			if err != nil {
				return err
			}
			defer rc.Close()
			return c.display(rc, c.out, nil)
		},
	}
	cmd.Flags().StringVarP(&input, "input", "i", "", "Read from tar archive file, instead of STDIN")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "Suppress the load output")
	cmd.Flags().StringSliceVar(&platforms, "platform", nil, "Load only the given platforms of a multi-platform image (os/arch[/variant]; repeat for several); default: every platform the archive holds")
	return cmd
}

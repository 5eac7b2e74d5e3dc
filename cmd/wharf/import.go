package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/distribution/reference"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
)

func newImportCommand(c *cli) *cobra.Command {
	var (
		changes  []string
		message  string
		platform string
	)
	cmd := &cobra.Command{
		Use:   "import [OPTIONS] file|- [REPOSITORY[:TAG]]",
		Short: "Import the contents from a tarball to create a filesystem image",
		Args:  requiresRangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := args[0]
			if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
				return fmt.Errorf("importing from a URL is not supported: download %s and import the file", src)
			}
			opts := client.ImportOptions{Changes: changes, Message: message}
			// An empty REPOSITORY argument ("") is no tag, as with docker.
			if len(args) == 2 && args[1] != "" {
				if _, err := reference.ParseNormalizedNamed(args[1]); err != nil {
					return fmt.Errorf("invalid reference format: %s", args[1])
				}
				opts.Ref = args[1]
			}
			p, err := parsePlatform(platform)
			if err != nil {
				return err
			}
			opts.Platform = p
			var in io.Reader
			if src == "-" {
				in = c.in
			} else {
				f, err := os.Open(src)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			api, err := c.client()
			if err != nil {
				return err
			}
			rc, err := api.ImageImport(cmd.Context(), in, opts)
			if err != nil {
				return err
			}
			defer rc.Close()
			return c.display(rc, c.out, nil)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&changes, "change", "c", nil, "Apply Dockerfile instruction to the created image")
	fl.StringVarP(&message, "message", "m", "", "Set commit message for imported image")
	fl.StringVar(&platform, "platform", "", "Set platform if server is multi-platform capable (os/arch[/variant])")
	return cmd
}

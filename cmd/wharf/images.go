package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
)

type imagesOptions struct {
	all     bool
	filters []string
	table   formatter.ImagesOptions
	check   checkRemoteFlags // images_check.go
}

func newImagesCommand(c *cli) *cobra.Command {
	var o imagesOptions
	cmd := &cobra.Command{
		Use:     "images [OPTIONS] [REPOSITORY[:TAG]]",
		Aliases: []string{"image-ls"},
		Short:   "List images",
		Args: func(cmd *cobra.Command, args []string) error {
			if o.check.enabled {
				return nil // --check-remote takes any number of names
			}
			return requiresRangeArgs(0, 1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.check.enabled {
				return runImagesCheckRemote(cmd.Context(), c, o, args)
			}
			if err := o.check.validate(); err != nil {
				return err
			}
			f, err := parseFilterFlags(o.filters)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				if f["reference"] == nil {
					f["reference"] = map[string]bool{}
				}
				f["reference"][args[0]] = true
			}
			api, err := c.client()
			if err != nil {
				return err
			}
			list, err := api.ImageList(cmd.Context(), client.ImageListOptions{All: o.all, Filters: f})
			if err != nil {
				return err
			}
			return formatter.Images(c.out, list, o.table, time.Now())
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.all, "all", "a", false, "Show all images (default hides intermediate images)")
	fl.BoolVarP(&o.table.Quiet, "quiet", "q", false, "Only show image IDs")
	fl.BoolVar(&o.table.Digests, "digests", false, "Show digests")
	fl.BoolVar(&o.table.NoTrunc, "no-trunc", false, "Don't truncate output")
	fl.StringArrayVarP(&o.filters, "filter", "f", nil, "Filter output based on conditions provided")
	o.check.register(fl)
	fl.StringVar(&o.table.Format, "format", "", "Format output using a custom template:\n'table':            Print output in table format with column headers (default)\n'table TEMPLATE':   Print output in table format using the given Go template\n'json':             Print in JSON format\n'TEMPLATE':         Print output using the given Go template")
	return cmd
}

// parseFilterFlags turns repeated --filter k=v into Filters.
func parseFilterFlags(in []string) (types.Filters, error) {
	f := types.Filters{}
	for _, kv := range in {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" {
			return nil, fmt.Errorf("bad format of filter (expected name=value)")
		}
		if f[k] == nil {
			f[k] = map[string]bool{}
		}
		f[k][v] = true
	}
	return f, nil
}

package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
)

type historyOptions struct {
	table    formatter.HistoryOptions
	platform string
}

func newHistoryCommand(c *cli) *cobra.Command {
	var o historyOptions
	cmd := &cobra.Command{
		Use:               "history [OPTIONS] IMAGE",
		Short:             "Show the history of an image",
		Args:              requiresExactArgs(1),
		ValidArgsFunction: completeImageNames(c, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			api, err := c.client()
			if err != nil {
				return err
			}
			p, err := parsePlatform(o.platform)
			if err != nil {
				return err
			}
			h, err := api.ImageHistoryPlatform(cmd.Context(), args[0], p)
			if err != nil {
				return err
			}
			return formatter.History(c.out, h, o.table, time.Now())
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.table.NoTrunc, "no-trunc", false, "Don't truncate output")
	fl.StringVar(&o.platform, "platform", "", "Show history for the given platform of a multi-platform image (os/arch[/variant])")
	fl.BoolVarP(&o.table.Quiet, "quiet", "q", false, "Only show image IDs")
	fl.BoolVarP(&o.table.Human, "human", "H", true, "Print sizes and dates in human readable format")
	fl.StringVar(&o.table.Format, "format", "", "Format output using a custom template:\n'table':            Print output in table format with column headers (default)\n'table TEMPLATE':   Print output in table format using the given Go template\n'json':             Print in JSON format\n'TEMPLATE':         Print output using the given Go template")
	return cmd
}

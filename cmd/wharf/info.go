package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
)

func newInfoCommand(c *cli) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "info [OPTIONS]",
		Short: "Display system-wide information",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, err := c.client()
			if err != nil {
				return err
			}
			info, err := api.Info(cmd.Context())
			if err != nil {
				return err
			}
			if format != "" {
				if format == "json" {
					format = "{{json .}}"
				}
				b, err := json.Marshal(info)
				if err != nil {
					return err
				}
				return formatter.Templated(c.out, format, []json.RawMessage{b})
			}
			formatter.Info(c.out, info)
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "", "Format output using a custom template:\n'json':             Print in JSON format\n'TEMPLATE':         Print output using the given Go template")
	return cmd
}

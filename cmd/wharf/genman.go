package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newGenManCommand writes roff man pages for every command into DIR.
func newGenManCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:    "gen-man DIR",
		Short:  "Generate roff man pages into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			root.DisableAutoGenTag = true
			header := &doc.GenManHeader{Title: "WHARF", Section: "1", Source: "wharf " + version, Manual: "wharf manual"}
			if err := doc.GenManTree(root, header, args[0]); err != nil {
				return fmt.Errorf("generating man pages: %w", err)
			}
			return nil
		},
	}
}

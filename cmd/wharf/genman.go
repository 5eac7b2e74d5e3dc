//go:build gendocs

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/wharfproject/wharf/cmd/wharf/internal/manpage"
)

// gen-man is built only with the gendocs tag (go run -tags gendocs
// ./cmd/wharf gen-man DIR; make test builds its tests with it): cobra/doc,
// go-md2man and blackfriday cost every other command about 1.5 ms of start
// (their package init and pages), and only a maintainer runs gen-man.
func init() { docCommands = append(docCommands, newGenManCommand) }

// newGenManCommand writes man pages for every visible command into DIR:
// roff through cobra/doc, or, with --markdown, go-md2man markdown
// (wharf-CMD.1.md) that does not overwrite pages written by hand.
func newGenManCommand(root *cobra.Command) *cobra.Command {
	var markdown, force bool
	cmd := &cobra.Command{
		Use:    "gen-man [--markdown [--force]] DIR",
		Short:  "Generate man pages into DIR",
		Hidden: true,
		Args:   requiresExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			root.DisableAutoGenTag = true
			if markdown {
				return manpage.WriteMarkdownTree(root, dir, force)
			}
			header := &doc.GenManHeader{Title: "WHARF", Section: "1", Source: "wharf " + version, Manual: "wharf manual"}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return fmt.Errorf("generating man pages: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "Write go-md2man markdown (wharf-CMD.1.md) instead of roff")
	cmd.Flags().BoolVar(&force, "force", false, "Overwrite existing markdown pages")
	return cmd
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

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
				return genMarkdownTree(root, dir, force)
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

// genMarkdownTree writes one markdown page per visible command.
func genMarkdownTree(cmd *cobra.Command, dir string, force bool) error {
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := genMarkdownTree(c, dir, force); err != nil {
			return err
		}
	}
	path := filepath.Join(dir, manPageName(cmd)+".1.md")
	if !force {
		if _, err := os.Stat(path); err == nil {
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return os.WriteFile(path, []byte(manMarkdown(cmd)), 0o644)
}

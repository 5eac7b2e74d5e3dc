package main

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// newGenCompletionCommand writes bash, zsh and fish completion scripts into
// DIR/bash/wharf, DIR/zsh/_wharf and DIR/fish/wharf.fish. The scripts ask
// the binary itself (wharf __complete …) for flags and values, so every flag,
// --remote included, is offered.
func newGenCompletionCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:    "gen-completion DIR",
		Short:  "Generate bash, zsh and fish completion scripts into DIR",
		Hidden: true,
		Args:   requiresExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			gens := []struct {
				path string
				gen  func(*bytes.Buffer) error
			}{
				{"bash/wharf", func(b *bytes.Buffer) error { return root.GenBashCompletionV2(b, true) }},
				{"zsh/_wharf", func(b *bytes.Buffer) error { return root.GenZshCompletion(b) }},
				{"fish/wharf.fish", func(b *bytes.Buffer) error { return root.GenFishCompletion(b, true) }},
			}
			for _, g := range gens {
				var b bytes.Buffer
				if err := g.gen(&b); err != nil {
					return err
				}
				p := filepath.Join(args[0], g.path)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

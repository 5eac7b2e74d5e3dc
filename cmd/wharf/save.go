package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

func newSaveCommand(c *cli) *cobra.Command {
	var output string
	var platforms []string
	cmd := &cobra.Command{
		Use:               "save [OPTIONS] IMAGE [IMAGE...]",
		Short:             "Save one or more images to a tar archive (streamed to STDOUT by default)",
		Args:              requiresMinArgs(1),
		ValidArgsFunction: completeImageNames(c, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" && isTerminal(c.out) {
				return errors.New("cowardly refusing to save to a terminal. Use the -o flag or redirect")
			}
			api, err := c.client()
			if err != nil {
				return err
			}
			ps, err := parsePlatforms(platforms)
			if err != nil {
				return err
			}
			rc, err := api.ImageSavePlatforms(cmd.Context(), args, ps)
			if err != nil {
				return err
			}
			defer rc.Close()
			if output == "" {
				_, err := io.Copy(c.out, rc)
				return err
			}
			return writeFileAtomic(output, rc)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Write to a file, instead of STDOUT")
	cmd.Flags().StringSliceVar(&platforms, "platform", nil, "Save only the given platforms of a multi-platform image (os/arch[/variant]; repeat for several); default: every platform present")
	return cmd
}

// writeFileAtomic writes r to path through a temporary file in the same
// directory, so a failed save never leaves a truncated tar under the name.
func writeFileAtomic(path string, r io.Reader) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("failed to save image: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return fmt.Errorf("failed to save image: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("failed to save image: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("failed to save image: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("failed to save image: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("failed to save image: %w", err)
	}
	return nil
}

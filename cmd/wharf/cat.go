package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/spf13/cobra"
)

// newCatCommand is `wharf cat IMAGE PATH`: a file's bytes, a symlink
// followed inside the image as docker cp -L follows it.
func newCatCommand(c *cli) *cobra.Command {
	var o contentsFlags
	cmd := &cobra.Command{
		Use:   "cat [OPTIONS] IMAGE PATH",
		Short: "Print a file of an image without pulling or running it",
		Long: "Print the bytes of a file of an image on standard output, without running it; with " +
			"--remote, without pulling it (one range request of the layer when its index is built). " +
			"A symlink is followed inside the image's root, never outside it. A directory is an error.",
		Example: `  wharf cat alpine:3.20 /etc/os-release
  wharf cat --remote --platform linux/arm64 registry.example.com/team/app:1.4 /app/config.yaml`,
		Args:              requiresExactArgs(2),
		ValidArgsFunction: completeImageNames(c, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCat(cmd.Context(), c, o, args[0], args[1])
		},
	}
	o.add(cmd)
	return cmd
}

func runCat(ctx context.Context, c *cli, o contentsFlags, name, p string) error {
	api, err := c.client()
	if err != nil {
		return err
	}
	opts, err := o.options(ctx, c, api, name, p)
	if err != nil {
		return err
	}
	rc, st, err := api.ImageArchive(ctx, name, opts)
	if err != nil {
		return err
	}
	// The stat's LinkTarget is the symlink resolved inside the image's
	// root (a chain followed to its end): one more request reads it.
	if st.Mode&fs.ModeSymlink != 0 {
		rc.Close()
		if st.LinkTarget == "" {
			return fmt.Errorf("%s in %s is a symlink to nothing in the image%.0w", p, name, errdefs.ErrNotFound)
		}
		opts.Path = st.LinkTarget
		if rc, st, err = api.ImageArchive(ctx, name, opts); err != nil {
			return err
		}
	}
	defer rc.Close()
	return catFile(rc, st, p, name, c.out)
}

// catFile copies the one file of the archive rc to w.
func catFile(rc io.Reader, st container.PathStat, p, name string, w io.Writer) error {
	if st.Mode.IsDir() {
		return fmt.Errorf("%s in %s is a directory%.0w", p, name, errdefs.ErrInvalidArgument)
	}
	if !st.Mode.IsRegular() {
		return fmt.Errorf("%s in %s is not a regular file (%s)%.0w", p, name, st.Mode.Type(), errdefs.ErrInvalidArgument)
	}
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("the daemon sent an empty archive for %s", p)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	if hdr.Typeflag != tar.TypeReg {
		return fmt.Errorf("the daemon's archive of %s starts with %q, not a file", p, hdr.Typeflag)
	}
	if _, err := io.Copy(w, tr); err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/cmd/wharf/internal/untar"
)

// newCpCommand is `wharf cp IMAGE:PATH DEST`: docker cp CONTAINER:SRC
// DEST, from an image.
func newCpCommand(c *cli) *cobra.Command {
	var o contentsFlags
	cmd := &cobra.Command{
		Use:   "cp [OPTIONS] IMAGE:PATH DEST|-",
		Short: "Copy files out of an image without pulling or running it",
		Long: "Copy a file or a directory out of an image, as docker cp copies out of a container, " +
			"without running it; with --remote, without pulling it. PATH is absolute. DEST - writes " +
			"the tar on standard output. A file is copied into DEST when DEST is a directory, and to " +
			"DEST otherwise; a directory is copied into DEST when DEST exists, and becomes DEST when it " +
			"does not (PATH ending in /. copies the directory's contents into DEST). Nothing is ever " +
			"written outside DEST: names with .., absolute names and symlinks that lead out are refused. " +
			"Modes are kept, owners are not; device nodes and fifos are skipped.",
		Example: `  wharf cp alpine:3.20:/etc/os-release .
  wharf cp --remote registry.example.com/team/app:1.4:/app ./app
  wharf cp app:1.4:/etc - | tar -t`,
		Args:              requiresExactArgs(2),
		ValidArgsFunction: completeImageNames(c, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCp(cmd.Context(), c, o, args[0], args[1])
		},
	}
	o.add(cmd)
	return cmd
}

// splitImagePath splits IMAGE:PATH at the first ":/": an image reference
// holds ":" (tag, port) but never ":/" (a port is followed by digits).
func splitImagePath(arg string) (name, p string, err error) {
	i := strings.Index(arg, ":/")
	if i <= 0 {
		return "", "", fmt.Errorf("invalid source %q: want IMAGE:PATH with an absolute PATH", arg)
	}
	return arg[:i], arg[i+1:], nil
}

func runCp(ctx context.Context, c *cli, o contentsFlags, src, dest string) error {
	name, p, err := splitImagePath(src)
	if err != nil {
		return err
	}
	api, err := c.client()
	if err != nil {
		return err
	}
	opts, err := o.options(ctx, c, api, name, p)
	if err != nil {
		return err
	}
	if dest == "-" {
		rc, _, err := api.ImageArchive(ctx, name, opts)
		if err != nil {
			return err
		}
		defer rc.Close()
		_, err = io.Copy(c.out, rc)
		return err
	}
	rc, st, err := api.ImageArchive(ctx, name, opts)
	if err != nil {
		return err
	}
	defer rc.Close()
	plan, err := planCopy(st, p, dest)
	if err != nil {
		return err
	}
	res, err := untar.Extract(ctx, rc, plan.dir, plan.opts)
	if err != nil {
		return err
	}
	if res.Skipped > 0 {
		fmt.Fprintf(c.err, "skipped %d device node(s) and fifo(s)\n", res.Skipped)
	}
	return nil
}

// copyPlan is where an archive is extracted: into dir, its top name
// mapped as opts say.
type copyPlan struct {
	dir  string
	opts untar.Options
}

// planCopy is docker cp's rule for the copy of src (whose stat is st) to
// dest, made into a directory to extract in and a mapping of the
// archive's top name (st.Name: the base name of src, "/" for the root).
func planCopy(st container.PathStat, src, dest string) (copyPlan, error) {
	isDir := st.Mode.IsDir()
	fi, err := os.Stat(dest) // dest is the user's own: a symlink there is followed, as docker cp does
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return copyPlan{}, err
	}
	mkdest := func() error {
		if exists {
			return nil
		}
		if err := os.Mkdir(dest, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", dest, err)
		}
		return nil
	}
	switch {
	case exists && !fi.IsDir() && isDir:
		return copyPlan{}, fmt.Errorf("cannot copy directory %s to file %s", src, dest)
	case isDir && (st.Name == "/" || strings.HasSuffix(src, "/.")):
		// The root, or a directory's contents: into dest itself.
		if err := mkdest(); err != nil {
			return copyPlan{}, err
		}
		return copyPlan{dir: dest, opts: untar.Options{Top: st.Name}}, nil
	case exists && fi.IsDir():
		return copyPlan{dir: dest, opts: untar.Options{Top: st.Name, NewTop: st.Name}}, nil
	case isDir:
		if err := mkdest(); err != nil {
			return copyPlan{}, err
		}
		return copyPlan{dir: dest, opts: untar.Options{Top: st.Name}}, nil
	}
	// A file (or a symlink) to the name dest, in dest's directory.
	if strings.HasSuffix(dest, string(filepath.Separator)) && !exists {
		return copyPlan{}, fmt.Errorf("destination directory %s does not exist", dest)
	}
	dir, base := filepath.Split(filepath.Clean(dest))
	if dir == "" {
		dir = "."
	}
	if pfi, err := os.Stat(dir); err != nil || !pfi.IsDir() {
		return copyPlan{}, fmt.Errorf("destination directory %s does not exist", dir)
	}
	return copyPlan{dir: dir, opts: untar.Options{Top: st.Name, NewTop: base, Single: true}}, nil
}

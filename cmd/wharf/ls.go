package main

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/client"
)

type lsOptions struct {
	long, recursive, layers bool
	format                  string
	contentsFlags
}

// contentsFlags are the flags ls, cat and cp share: which image.
type contentsFlags struct {
	remote   bool
	platform string
}

func (f *contentsFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVarP(&f.remote, "remote", "r", false, "Read the image from its registry without pulling it")
	fl.StringVar(&f.platform, "platform", "", "Platform of a multi-platform image (os/arch[/variant]); default: the local image's own, or the daemon's")
}

// options are the client options of name's path, with the stored
// credentials of each registry the daemon may find name at (a remote
// image, or a local one whose layers are read from its registry).
func (f contentsFlags) options(ctx context.Context, c *cli, api *client.Client, name, p string) (client.FilesOptions, error) {
	platform, err := parsePlatform(f.platform)
	if err != nil {
		return client.FilesOptions{}, err
	}
	opts := client.FilesOptions{Path: p, Remote: f.remote, Platform: platform}
	opts.Registries, opts.Auth, err = c.creds().ForName(ctx, api, name)
	return opts, err
}

// newLsCommand is `wharf ls IMAGE [PATH]`: the files of an image, as ls
// lists a directory, from the image's layer index.
func newLsCommand(c *cli) *cobra.Command {
	var o lsOptions
	cmd := &cobra.Command{
		Use:   "ls [OPTIONS] IMAGE [PATH]",
		Short: "List the files of an image without pulling or running it",
		Long: "List the files of an image as a container of it would see them (whiteouts applied), " +
			"without running it; with --remote, without pulling it. PATH (default /) is a directory, " +
			"whose entries are listed, or a file. -l prints mode, owner, size and time as ls -l does; " +
			"-R lists everything under PATH, as full paths. --layers lists each layer's own entries " +
			"instead, with the layer's digest. --format json prints the daemon's NDJSON, one entry a line.",
		Example: `  wharf ls alpine:3.20 /etc
  wharf ls -lR --remote registry.example.com/team/app:1.4 /usr/local/bin
  wharf ls --layers --format json app:1.4 /`,
		Args:              requiresRangeArgs(1, 2),
		ValidArgsFunction: completeImageNames(c, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := "/"
			if len(args) == 2 {
				p = args[1]
			}
			return runLs(cmd.Context(), c, o, args[0], p)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.long, "long", "l", false, "Long listing: mode, uid, gid, size, time, name")
	fl.BoolVarP(&o.recursive, "recursive", "R", false, "List everything under PATH, as full paths")
	fl.BoolVar(&o.layers, "layers", false, "List each layer's own entries, with the layer")
	fl.StringVar(&o.format, "format", "", "Output format: 'json' prints the daemon's NDJSON")
	o.contentsFlags.add(cmd)
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runLs(ctx context.Context, c *cli, o lsOptions, name, p string) error {
	if o.format != "" && o.format != "json" {
		return fmt.Errorf("invalid --format %q: want json", o.format)
	}
	api, err := c.client()
	if err != nil {
		return err
	}
	opts, err := o.options(ctx, c, api, name, p)
	if err != nil {
		return err
	}
	opts.Recursive, opts.Layers = o.recursive, o.layers
	// A listing can hold 10^6 entries: one write per 64 KiB, not per line.
	w := bufio.NewWriterSize(c.out, 64<<10)
	clean := path.Join("/", p)
	var line []byte
	err = api.ImageFiles(ctx, name, opts, func(e types.FileEntry, raw []byte) error {
		if o.format == "json" {
			line = append(append(line[:0], raw...), '\n')
		} else {
			line = appendLsLine(line[:0], &e, o, displayName(e.Path, clean, o.recursive))
		}
		_, err := w.Write(line)
		return err
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// displayName is how ls names an entry: its base name inside the listed
// directory, its full path with -R or when it is the listed path itself
// (a file).
func displayName(p, listed string, recursive bool) string {
	if recursive || p == listed {
		return p
	}
	return path.Base(p)
}

// appendLsLine appends one line of the listing to b, newline included: a
// listing reuses one buffer for all its lines.
func appendLsLine(b []byte, e *types.FileEntry, o lsOptions, name string) []byte {
	if o.layers {
		b = append(b, shortDigest(e.Layer)...)
		b = append(b, ' ')
	}
	if o.long {
		mt := e.ModTime
		if t, err := time.Parse(time.RFC3339Nano, e.ModTime); err == nil {
			mt = t.UTC().Format("2006-01-02 15:04")
		}
		b = fmt.Appendf(b, "%s %5d %5d %10d %s ", lsMode(*e), e.Uid, e.Gid, e.Size, mt)
	}
	b = append(b, name...)
	if o.long {
		switch e.Type {
		case types.FileTypeSymlink:
			b = append(b, " -> "...)
			b = append(b, e.Linkname...)
		case types.FileTypeHardlink:
			b = append(b, " link to "...)
			b = append(b, e.Linkname...)
		}
	}
	return append(b, '\n')
}

// shortDigest is a layer's digest as docker's short IDs: 12 hex digits.
func shortDigest(d string) string {
	_, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) < 12 {
		if d == "" {
			return strings.Repeat("-", 12)
		}
		return d
	}
	return hex[:12]
}

// lsMode is ls -l's mode string: the type letter, then rwx with s/S and
// t/T for setuid, setgid and sticky (Go's FileMode.String writes those
// as letters in front instead).
func lsMode(e types.FileEntry) string {
	m := fs.FileMode(e.Mode)
	t := byte('-')
	switch e.Type {
	case types.FileTypeDir:
		t = 'd'
	case types.FileTypeSymlink:
		t = 'l'
	case types.FileTypeChar:
		t = 'c'
	case types.FileTypeBlock:
		t = 'b'
	case types.FileTypeFifo:
		t = 'p'
	}
	b := []byte{t}
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		c := byte('-')
		if m&(1<<uint(8-i)) != 0 {
			c = rwx[i]
		}
		b = append(b, c)
	}
	special := func(i int, set bool, lower, upper byte) {
		if !set {
			return
		}
		if b[i] == 'x' {
			b[i] = lower
		} else {
			b[i] = upper
		}
	}
	special(3, m&fs.ModeSetuid != 0, 's', 'S')
	special(6, m&fs.ModeSetgid != 0, 's', 'S')
	special(9, m&fs.ModeSticky != 0, 't', 'T')
	return string(b)
}

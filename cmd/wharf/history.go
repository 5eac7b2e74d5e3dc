package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/api/types/image"
	"github.com/spf13/cobra"
)

const (
	defaultHistoryFormat = "table {{.ID}}\t{{.CreatedSince}}\t{{.CreatedBy}}\t{{.Size}}\t{{.Comment}}"
	// createdByWidth is docker's cut of the CREATED BY column.
	createdByWidth = 45
)

var historyHeaders = map[string]string{
	"ID":           "IMAGE",
	"CreatedSince": "CREATED",
	"CreatedAt":    "CREATED AT",
	"CreatedBy":    "CREATED BY",
	"Size":         "SIZE",
	"Comment":      "COMMENT",
}

// historyRow is one line of `wharf history`.
type historyRow struct {
	Comment      string
	CreatedAt    string
	CreatedBy    string
	CreatedSince string
	ID           string
	Size         string
}

type historyOptions struct {
	noTrunc, quiet, human bool
	format                string
	platform              string
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
			return writeHistory(c, h, o, time.Now())
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.noTrunc, "no-trunc", false, "Don't truncate output")
	fl.StringVar(&o.platform, "platform", "", "Show history for the given platform of a multi-platform image (os/arch[/variant])")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "Only show image IDs")
	fl.BoolVarP(&o.human, "human", "H", true, "Print sizes and dates in human readable format")
	fl.StringVar(&o.format, "format", "", "Format output using a custom template:\n'table':            Print output in table format with column headers (default)\n'table TEMPLATE':   Print output in table format using the given Go template\n'json':             Print in JSON format\n'TEMPLATE':         Print output using the given Go template")
	return cmd
}

func writeHistory(c *cli, items []image.HistoryResponseItem, o historyOptions, now time.Time) error {
	format := o.format
	switch {
	case o.quiet:
		format = "{{.ID}}"
	case format == "" || format == "table":
		format = defaultHistoryFormat
	}
	w, err := newRowWriter(c.out, format, historyHeaders)
	if err != nil {
		return err
	}
	for _, h := range items {
		if err := w.Write(historyRowOf(h, o, now)); err != nil {
			return err
		}
	}
	return w.Flush()
}

func historyRowOf(h image.HistoryResponseItem, o historyOptions, now time.Time) historyRow {
	created := time.Unix(h.Created, 0)
	r := historyRow{
		Comment:   h.Comment,
		CreatedAt: created.Format(time.RFC3339),
		ID:        h.ID,
		CreatedBy: strings.ReplaceAll(h.CreatedBy, "\t", " "),
	}
	if !o.noTrunc && h.ID != "<missing>" {
		r.ID = shortID(h.ID)
	}
	if !o.noTrunc {
		r.CreatedBy = ellipsis(r.CreatedBy, createdByWidth)
	}
	if o.human {
		r.CreatedSince = sinceString(created, now)
		r.Size = humanSize(h.Size)
	} else {
		r.CreatedSince = r.CreatedAt
		r.Size = fmt.Sprint(h.Size)
	}
	return r
}

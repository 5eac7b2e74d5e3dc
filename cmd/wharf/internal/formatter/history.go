package formatter

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/api/types/image"
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

// HistoryRow is one line of `wharf history`.
type HistoryRow struct {
	Comment      string
	CreatedAt    string
	CreatedBy    string
	CreatedSince string
	ID           string
	Size         string
}

// HistoryOptions are the flags of `wharf history` that shape its output.
type HistoryOptions struct {
	NoTrunc, Quiet, Human bool
	Format                string
}

// History prints an image's history with the options' format.
func History(out io.Writer, items []image.HistoryResponseItem, o HistoryOptions, now time.Time) error {
	format := o.Format
	switch {
	case o.Quiet:
		format = "{{.ID}}"
	case format == "" || format == "table":
		format = defaultHistoryFormat
	}
	w, err := NewRows(out, format, historyHeaders)
	if err != nil {
		return err
	}
	for _, h := range items {
		if err := w.Write(historyRow(h, o, now)); err != nil {
			return err
		}
	}
	return w.Flush()
}

func historyRow(h image.HistoryResponseItem, o HistoryOptions, now time.Time) HistoryRow {
	created := time.Unix(h.Created, 0)
	r := HistoryRow{
		Comment:   h.Comment,
		CreatedAt: created.Format(time.RFC3339),
		ID:        h.ID,
		CreatedBy: strings.ReplaceAll(h.CreatedBy, "\t", " "),
	}
	if !o.NoTrunc && h.ID != "<missing>" {
		r.ID = ShortID(h.ID)
	}
	if !o.NoTrunc {
		r.CreatedBy = Ellipsis(r.CreatedBy, createdByWidth)
	}
	if o.Human {
		r.CreatedSince = Since(created, now)
		r.Size = HumanSize(h.Size)
	} else {
		r.CreatedSince = r.CreatedAt
		r.Size = fmt.Sprint(h.Size)
	}
	return r
}

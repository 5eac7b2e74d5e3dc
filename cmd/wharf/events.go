package main

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/formatter"
)

func newEventsCommand(c *cli) *cobra.Command {
	var (
		since, until, format string
		filters              []string
	)
	cmd := &cobra.Command{
		Use:   "events [OPTIONS]",
		Short: "Get real time events from the daemon",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			s, err := apiTimestamp(since, now)
			if err != nil {
				return err
			}
			u, err := apiTimestamp(until, now)
			if err != nil {
				return err
			}
			f, err := parseFilterFlags(filters)
			if err != nil {
				return err
			}
			var w *formatter.Rows
			if format != "" {
				if w, err = formatter.NewRows(c.out, format, nil); err != nil {
					return err
				}
			}
			api, err := c.client()
			if err != nil {
				return err
			}
			rc, err := api.Events(cmd.Context(), client.EventsOptions{Since: s, Until: u, Filters: f})
			if err != nil {
				return err
			}
			defer rc.Close()
			for ev, err := range client.DecodeEvents(rc) {
				if err != nil {
					if cmd.Context().Err() != nil {
						return nil
					}
					return err
				}
				if w != nil {
					err = w.Write(ev)
				} else {
					err = formatter.Event(c.out, ev)
				}
				if err != nil {
					return err
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&since, "since", "", "Show all events created since timestamp")
	fl.StringVar(&until, "until", "", "Stream events until this timestamp")
	fl.StringArrayVarP(&filters, "filter", "f", nil, "Filter output based on conditions provided")
	fl.StringVar(&format, "format", "", "Format output using a custom template:\n'json':             Print in JSON format\n'TEMPLATE':         Print output using the given Go template")
	return cmd
}

var unixTimestamp = regexp.MustCompile(`^-?[0-9]+(\.[0-9]{1,9})?$`)

// apiTimestamp converts --since/--until into what the API takes (Unix
// seconds with nanoseconds), as docker does: a Go duration is relative to
// now ("10m"), RFC 3339 times and dates are absolute, Unix timestamps pass.
func apiTimestamp(v string, now time.Time) (string, error) {
	if v == "" {
		return "", nil
	}
	if unixTimestamp.MatchString(v) {
		return v, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return unixNano(now.Add(-d)), nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		loc := time.Local
		if strings.Contains(layout, "Z07") {
			loc = time.UTC
		}
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return unixNano(t), nil
		}
	}
	return "", fmt.Errorf("failed to parse time %q: want a Unix timestamp, a date, RFC 3339 or a duration like 10m", v)
}

func unixNano(t time.Time) string {
	return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond())
}

package server

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/events"

	"github.com/wharfproject/wharf/api/types"
)

// eventFilters are the /events filter keys dockerd accepts.
var eventFilters = []string{
	"config", "container", "daemon", "event", "image", "label", "network",
	"node", "plugin", "scope", "secret", "service", "type", "volume",
}

// parseEventTime parses dockerd's "seconds[.nanoseconds]" timestamps; empty
// is the zero time.
func parseEventTime(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	sec, frac, hasFrac := strings.Cut(v, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, invalidArg("invalid timestamp %q: %v", v, err)
	}
	var ns int64
	if hasFrac {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		n, err := strconv.ParseInt(frac, 10, 64)
		if err != nil || n < 0 {
			return time.Time{}, invalidArg("invalid timestamp %q", v)
		}
		ns = n * int64(math.Pow10(9-len(frac)))
	}
	return time.Unix(s, ns), nil
}

// The instants whose Unix nanoseconds fit an int64: 1677-09-21 to
// 2262-04-11. Events carry timeNano, and comparing a since or until beyond
// them as nanoseconds wraps around (2300-01-01 becomes a date in 1715), so
// --since 2300 replayed every past event and --until 2300 none.
var (
	minEventTime = time.Unix(0, math.MinInt64)
	maxEventTime = time.Unix(0, math.MaxInt64)
)

// clampEventTime brings a since or until into that range. Every event
// happens inside it, so which events are selected does not change: a since
// after 2262 still replays none, an until after it still ends nothing.
// The zero time (no bound) stays zero.
func clampEventTime(t time.Time) time.Time {
	switch {
	case t.IsZero():
		return t
	case t.Before(minEventTime):
		return minEventTime
	case t.After(maxEventTime):
		return maxEventTime
	}
	return t
}

// backfillLegacy sets the status/id/from fields that docker CLIs before v25
// need on image and container events, when the backend left them empty.
func backfillLegacy(ev *types.EventMessage) {
	if ev.Type != events.ImageEventType && ev.Type != events.ContainerEventType {
		return
	}
	if ev.Status == "" {
		ev.Status = string(ev.Action)
	}
	if ev.ID == "" {
		ev.ID = ev.Actor.ID
	}
	if ev.Type == events.ContainerEventType && ev.From == "" {
		ev.From = ev.Actor.Attributes["image"]
	}
}

func (s *Server) getEvents(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	since, err := parseEventTime(r.Form.Get("since"))
	if err != nil {
		return err
	}
	until, err := parseEventTime(r.Form.Get("until"))
	if err != nil {
		return err
	}
	if !until.IsZero() && until.Before(since) {
		return invalidArg("`since` time (%s) cannot be after `until` time (%s)", r.Form.Get("since"), r.Form.Get("until"))
	}
	// After the order check, which must see the dates as given.
	since, until = clampEventTime(since), clampEventTime(until)
	f, err := parseFilters(r)
	if err != nil {
		return err
	}
	if err := validateFilters(f, eventFilters...); err != nil {
		return err
	}
	version := apiVersionFrom(r.Context())

	var timeout <-chan time.Time
	onlyPast := false
	if !until.IsZero() {
		now := time.Now()
		onlyPast = until.Before(now)
		if !onlyPast {
			t := time.NewTimer(until.Sub(now))
			defer t.Stop()
			timeout = t.C
		}
	}

	past, live, cancel := s.backend.SubscribeEvents(since, until, f)
	defer cancel()

	// dockerd: application/json below 1.52 (what it always said, though
	// the body is a stream), application/jsonl from 1.52, and at every
	// version the stream type the Accept header names explicitly (1.52:
	// x-ndjson and json-seq, 1.53: jsonl).
	contentType := "application/json"
	if versionAtLeast(version, "1.52") {
		contentType = mediaTypeJSONLines
	}
	if ct := matchAcceptStrict(r.Header.Values("Accept"), eventStreamTypes); ct != "" {
		contentType = ct
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	// Image create events exist from API 1.46 on.
	skip := func(ev types.EventMessage) bool {
		return versionLess(version, "1.46") && ev.Type == events.ImageEventType && ev.Action == events.ActionCreate
	}
	// The legacy status, id and from fields go at 1.52 (dockerd's
	// includeLegacyFields); the daemon fills them, so they are cleared here.
	legacy := versionLess(version, "1.52")
	enc := json.NewEncoder(w)
	send := func(ev types.EventMessage) error {
		if skip(ev) {
			return nil
		}
		if legacy {
			backfillLegacy(&ev)
		} else {
			ev.Status, ev.ID, ev.From = "", "", ""
		}
		if contentType == mediaTypeJSONSequence {
			// RFC 7464: each record starts with RS (0x1E); Encode adds the LF.
			if _, err := w.Write([]byte{0x1e}); err != nil {
				return err
			}
		}
		if err := enc.Encode(ev); err != nil {
			return err
		}
		return rc.Flush()
	}
	for _, ev := range past {
		if err := send(ev); err != nil {
			return nil
		}
	}
	if onlyPast || live == nil {
		return nil
	}
	for {
		select {
		case ev, ok := <-live:
			if !ok {
				// The daemon is shutting down.
				return nil
			}
			if !until.IsZero() && ev.TimeNano > until.UnixNano() {
				return nil
			}
			if err := send(ev); err != nil {
				return nil
			}
		case <-timeout:
			return nil
		case <-r.Context().Done():
			return nil
		}
	}
}

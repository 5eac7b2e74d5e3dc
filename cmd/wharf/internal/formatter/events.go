package formatter

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/wharfproject/wharf/api/types"
)

// rfc3339NanoFixed pads nanoseconds so every event line has the same width
// (docker's jsonmessage.RFC3339NanoFixed).
const rfc3339NanoFixed = "2006-01-02T15:04:05.000000000Z07:00"

// Event prints ev like `docker events`:
// TIME TYPE ACTION ACTOR-ID (k=v, …).
func Event(out io.Writer, ev types.EventMessage) error {
	var b strings.Builder
	switch {
	case ev.TimeNano != 0:
		b.WriteString(time.Unix(0, ev.TimeNano).Format(rfc3339NanoFixed) + " ")
	case ev.Time != 0:
		b.WriteString(time.Unix(ev.Time, 0).Format(rfc3339NanoFixed) + " ")
	}
	fmt.Fprintf(&b, "%s %s %s", ev.Type, ev.Action, ev.Actor.ID)
	if len(ev.Actor.Attributes) > 0 {
		keys := make([]string, 0, len(ev.Actor.Attributes))
		for k := range ev.Actor.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		attrs := make([]string, len(keys))
		for i, k := range keys {
			attrs[i] = k + "=" + ev.Actor.Attributes[k]
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(attrs, ", "))
	}
	b.WriteByte('\n')
	_, err := io.WriteString(out, b.String())
	return err
}

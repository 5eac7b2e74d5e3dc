package formatter

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wharfproject/wharf/api/types"
)

// Scrub says what the daemon's background scrub after its start did
// and found (the orphan collection and the quick check).
func Scrub(w io.Writer, sc *types.ScrubReport) {
	if sc == nil {
		fmt.Fprintln(w, "last scrub: none since the daemon started")
		return
	}
	fmt.Fprintf(w, "last scrub: %s, took %s\n", sc.Started.UTC().Format(time.RFC3339), sc.Finished.Sub(sc.Started).Round(time.Millisecond))
	if sc.Error != "" {
		fmt.Fprintf(w, "  stopped: %s\n", sc.Error)
	}
	if sc.CollectedBlobs > 0 {
		more := ""
		if n := sc.CollectedBlobs - len(sc.Collected); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		fmt.Fprintf(w, "  moved %d blob(s) no image used (%s) out of blobs/: %s%s\n",
			sc.CollectedBlobs, HumanSize(sc.CollectedBytes), strings.Join(sc.Collected, ", "), more)
	} else if sc.Error == "" {
		fmt.Fprintln(w, "  no blob without an image")
	}
	if sc.Error == "" {
		fmt.Fprintf(w, "  checked sizes of %d images and %d blobs: %d problem(s)\n", sc.Images, sc.Blobs, sc.ProblemCount)
	}
	for _, p := range sc.Problems {
		fmt.Fprintf(w, "  %s: %s\n", p.Kind, p.Message)
	}
	if n := sc.ProblemCount - len(sc.Problems); n > 0 {
		fmt.Fprintf(w, "  %d more problem(s) not listed\n", n)
	}
}

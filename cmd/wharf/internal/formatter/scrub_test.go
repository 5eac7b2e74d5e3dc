package formatter

import (
	"bytes"
	"testing"
	"time"

	"github.com/wharfproject/wharf/api/types"
)

// TestPrintScrub: what `wharf system check` says of the daemon's last
// scrub (stderr), for none, a clean one, one that collected blobs and
// found problems beyond those listed, and one that stopped.
func TestPrintScrub(t *testing.T) {
	at := time.Date(2026, 12, 4, 21, 17, 55, 500e6, time.UTC)
	for _, tc := range []struct {
		name string
		rep  *types.ScrubReport
		want string
	}{
		{"none", nil, "last scrub: none since the daemon started\n"},
		{"clean", &types.ScrubReport{Started: at, Finished: at.Add(1500 * time.Millisecond), Images: 3, Blobs: 9},
			"last scrub: 2026-12-04T21:17:55Z, took 1.5s\n  no blob without an image\n  checked sizes of 3 images and 9 blobs: 0 problem(s)\n"},
		{"collected and problems", &types.ScrubReport{Started: at, Finished: at.Add(42 * time.Millisecond),
			CollectedBlobs: 3, CollectedBytes: 2048, Collected: []string{"sha256:aa", "sha256:bb"},
			Images: 2, Blobs: 5, ProblemCount: 2, Problems: []types.CheckProblem{{Kind: "missing-blob", Message: "image x: layer 0 sha256:cc is missing"}}},
			"last scrub: 2026-12-04T21:17:55Z, took 42ms\n" +
				"  moved 3 blob(s) no image used (2.05kB) out of blobs/: sha256:aa, sha256:bb and 1 more\n" +
				"  checked sizes of 2 images and 5 blobs: 2 problem(s)\n" +
				"  missing-blob: image x: layer 0 sha256:cc is missing\n" +
				"  1 more problem(s) not listed\n"},
		{"stopped", &types.ScrubReport{Started: at, Finished: at.Add(time.Second), Error: "collect unreferenced blobs: context canceled"},
			"last scrub: 2026-12-04T21:17:55Z, took 1s\n  stopped: collect unreferenced blobs: context canceled\n"},
	} {
		var b bytes.Buffer
		Scrub(&b, tc.rep)
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, b.String(), tc.want)
		}
	}
}

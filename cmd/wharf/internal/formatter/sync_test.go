package formatter

import (
	"testing"

	"github.com/wharfproject/wharf/client"
)

// TestSyncSummaryLine: a sync into an archive says what it wrote into the
// archive; it once said "2 uploaded … 557B uploaded", as if to a registry.
func TestSyncSummaryLine(t *testing.T) {
	s := &client.SyncSummary{Images: 2, Synced: 2, BlobsUploaded: 2, BlobsExisted: 2, BytesUploaded: 557}
	for _, tc := range []struct {
		dryRun, toArchive bool
		want              string
	}{
		{false, false, "2 images: 2 synced, 0 skipped, 0 failed (blobs: 2 uploaded, 0 mounted, 2 existed; 557B uploaded)"},
		{false, true, "2 images: 2 synced, 0 skipped, 0 failed (blobs: 2 written to the archive, 2 already in it; 557B written)"},
		{true, true, "Dry run: 2 images, 0 to copy, 0 already there, 0 failed"},
	} {
		if got := SyncSummary(s, tc.dryRun, tc.toArchive); got != tc.want {
			t.Errorf("dryRun=%v toArchive=%v:\n got %q\nwant %q", tc.dryRun, tc.toArchive, got, tc.want)
		}
	}
}

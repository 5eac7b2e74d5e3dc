package formatter

import (
	"fmt"

	"github.com/wharfproject/wharf/client"
)

// SyncLine is the line of one sync event.
func SyncLine(ev client.SyncEvent) string {
	switch ev.Status {
	case "paused":
		return fmt.Sprintf("paused   %s: its rate limit is under the floor, until %s", ev.Registry, ev.Until)
	case "backup":
		return fmt.Sprintf("backup   %s (%s)", ev.Destination, ev.DestinationDigest)
	case "failed":
		if ev.Failure != nil {
			return fmt.Sprintf("failed   %s at %s (%s): %s", ev.Failure.Image, ev.Failure.Step, ev.Failure.Class, ev.Failure.Message)
		}
	case "synced":
		s := fmt.Sprintf("synced   %s -> %s (%s)", ev.Source, ev.Destination, ev.Digest)
		if ev.Copy != nil {
			s += fmt.Sprintf(" %d blobs: %d existed, %d mounted, %d uploaded", ev.Copy.Blobs, ev.Copy.Existed, ev.Copy.Mounted, ev.Copy.Uploaded)
		}
		return s
	}
	return fmt.Sprintf("%-8s %s -> %s (%s)", ev.Status, ev.Source, ev.Destination, ev.Digest)
}

// SyncSummary is the sync's last line. toArchive: the blobs went into an
// OCI archive (written once each, the rest already in it), not to a registry.
func SyncSummary(s *client.SyncSummary, dryRun, toArchive bool) string {
	if dryRun {
		return fmt.Sprintf("Dry run: %d images, %d to copy, %d already there, %d failed", s.Images, s.Planned, s.Skipped, s.Failed)
	}
	line := fmt.Sprintf("%d images: %d synced, %d skipped, %d failed", s.Images, s.Synced, s.Skipped, s.Failed)
	if s.NotRun > 0 {
		line += fmt.Sprintf(", %d not run", s.NotRun)
	}
	if s.Backups > 0 {
		line += fmt.Sprintf(", %d backups", s.Backups)
	}
	if toArchive {
		return line + fmt.Sprintf(" (blobs: %d written to the archive, %d already in it; %s written)", s.BlobsUploaded, s.BlobsExisted, HumanSize(s.BytesUploaded))
	}
	return line + fmt.Sprintf(" (blobs: %d uploaded, %d mounted, %d existed; %s uploaded)", s.BlobsUploaded, s.BlobsMounted, s.BlobsExisted, HumanSize(s.BytesUploaded))
}

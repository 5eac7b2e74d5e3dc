package server

import (
	"net/http"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/volume"

	"github.com/wharfproject/wharf/api/types"
)

// diskUsage152 is GET /system/df from API 1.52 (dockerd's diskUsageCompat):
// the per-type usage objects, and before them the legacy fields of older
// versions unless verbose=1 was asked for. dockerd still sends both at 1.55
// (its "remove at 1.53" is a FIXME, not done), and so does wharfd.
type diskUsage152 struct {
	LayersSize int64           `json:",omitempty"`
	Images     []image.Summary `json:",omitzero"`
	Containers []struct{}      `json:",omitzero"`
	Volumes    []struct{}      `json:",omitzero"`
	BuildCache []struct{}      `json:",omitzero"`
	// BuilderSize and the partial downloads: wharf's, beside the legacy
	// fields (BuilderSize for clients that read it unchecked, see
	// types.DiskUsage).
	BuilderSize          *int64 `json:",omitempty"`
	PartialDownloads     int    `json:",omitempty"`
	PartialDownloadsSize int64  `json:",omitempty"`

	ImageUsage      *image.DiskUsage
	ContainerUsage  *container.DiskUsage
	VolumeUsage     *volume.DiskUsage
	BuildCacheUsage *build.DiskUsage
}

// writeDiskUsage152 answers /system/df at API ≥ 1.52. wharfd has no
// container, volume or build cache: their usage objects are empty ({}), as
// dockerd's are with none. Images: every image is listed (dockerd computes
// the list for the legacy fields or verbose, which is every request);
// TotalSize is LayersSize; ActiveCount 0 (no container uses an image);
// Reclaimable sums Size − SharedSize, dockerd's rule for an unused image.
func writeDiskUsage152(w http.ResponseWriter, r *http.Request, du *types.DiskUsage) {
	iu := &image.DiskUsage{TotalCount: int64(len(du.Images)), TotalSize: du.LayersSize, Items: du.Images}
	for _, img := range du.Images {
		if img.Containers == 0 && img.Size != -1 && img.SharedSize != -1 {
			iu.Reclaimable += img.Size - img.SharedSize
		}
	}
	out := diskUsage152{
		PartialDownloads:     du.PartialDownloads,
		PartialDownloadsSize: du.PartialDownloadsSize,
		ImageUsage:           iu,
		ContainerUsage:       &container.DiskUsage{},
		VolumeUsage:          &volume.DiskUsage{},
		BuildCacheUsage:      &build.DiskUsage{},
	}
	if !boolValue(r, "verbose") {
		out.LayersSize = du.LayersSize
		out.Images = nonNilSlice(du.Images)
		out.Containers, out.Volumes, out.BuildCache = []struct{}{}, []struct{}{}, []struct{}{}
		out.BuilderSize = &du.BuilderSize
	}
	writeJSON(w, http.StatusOK, out)
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

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
	LayerIndexes         int    `json:",omitempty"`
	LayerIndexesSize     int64  `json:",omitempty"`

	ImageUsage      *image.DiskUsage     `json:",omitempty"`
	ContainerUsage  *container.DiskUsage `json:",omitempty"`
	VolumeUsage     *volume.DiskUsage    `json:",omitempty"`
	BuildCacheUsage *build.DiskUsage     `json:",omitempty"`
}

// writeDiskUsage152 answers /system/df at API ≥ 1.52. wharfd has no
// container, volume or build cache: their usage objects are empty ({}), as
// dockerd's are with none. Images: every image is listed (dockerd computes
// the list for the legacy fields or verbose, which is every request);
// TotalSize is LayersSize; ActiveCount 0 (no container uses an image);
// Reclaimable sums Size − SharedSize, dockerd's rule for an unused image.
//
// type= (repeatable, from 1.42) keeps the object types named, as dockerd
// computes only those; an unknown one is refused with dockerd's words.
func writeDiskUsage152(w http.ResponseWriter, r *http.Request, du *types.DiskUsage) error {
	want := map[string]bool{"container": true, "image": true, "volume": true, "build-cache": true}
	if ts, ok := r.Form["type"]; ok {
		want = map[string]bool{}
		for _, t := range ts {
			switch t {
			case "container", "image", "volume", "build-cache":
				want[t] = true
			default:
				return invalidArg("unknown object type: %s", t)
			}
		}
	}
	iu := &image.DiskUsage{TotalCount: int64(len(du.Images)), TotalSize: du.LayersSize, Items: du.Images}
	for _, img := range du.Images {
		if img.Containers == 0 && img.Size != -1 && img.SharedSize != -1 {
			iu.Reclaimable += img.Size - img.SharedSize
		}
	}
	out := diskUsage152{}
	legacy := !boolValue(r, "verbose")
	if want["image"] {
		out.ImageUsage = iu
		out.PartialDownloads, out.PartialDownloadsSize = du.PartialDownloads, du.PartialDownloadsSize
		out.LayerIndexes, out.LayerIndexesSize = du.LayerIndexes, du.LayerIndexesSize
		if legacy {
			out.LayersSize, out.Images = du.LayersSize, nonNilSlice(du.Images)
		}
	}
	if want["container"] {
		out.ContainerUsage = &container.DiskUsage{}
		if legacy {
			out.Containers = []struct{}{}
		}
	}
	if want["volume"] {
		out.VolumeUsage = &volume.DiskUsage{}
		if legacy {
			out.Volumes = []struct{}{}
		}
	}
	if want["build-cache"] {
		out.BuildCacheUsage = &build.DiskUsage{}
		if legacy {
			out.BuildCache = []struct{}{}
			out.BuilderSize = &du.BuilderSize
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

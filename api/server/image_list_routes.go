package server

import (
	"bufio"
	"encoding/json"
	"net/http"

	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// imageListFilters are the filters GET /images/json accepts.
var imageListFilters = []string{"before", "dangling", "label", "reference", "since", "until"}

func (s *Server) getImagesJSON(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	f, err := parseFilters(r)
	if err != nil {
		return err
	}
	version := apiVersionFrom(r.Context())
	if versionLess(version, "1.41") {
		// The old `filter` parameter is a reference glob.
		if ref := r.Form.Get("filter"); ref != "" {
			if f["reference"] == nil {
				f["reference"] = map[string]bool{}
			}
			f["reference"][ref] = true
		}
	}
	if err := validateFilters(f, imageListFilters...); err != nil {
		return err
	}
	opts := types.ImageListOptions{
		All:       boolValue(r, "all"),
		Digests:   boolValue(r, "digests"),
		Manifests: versionAtLeast(version, "1.47") && boolValue(r, "manifests"),
		Identity:  versionAtLeast(version, "1.54") && boolValue(r, "identity"),
		Filters:   f,
	}
	if opts.Identity && !opts.Manifests {
		return invalidArg("conflicting options: identity requires manifests=1")
	}
	return streamImageList(w, r, s.backend, opts, version)
}

// streamImageList writes GET /images/json an entry at a time, the same
// bytes writeJSON writes of the whole list: at 50,000 images the list,
// its entries' JSON and the array's were each held whole (~250 MB of heap
// at the peak). An error before the first entry is answered as usual;
// one after it (the header is sent) aborts the connection, so that a
// client never takes a cut list for a whole one.
func streamImageList(w http.ResponseWriter, r *http.Request, st ImageBackend, opts types.ImageListOptions, version string) error {
	var bw *bufio.Writer
	err := st.ImagesEach(r.Context(), opts, func(img image.Summary) error {
		b, err := gateImageSummary(img, version)
		if err != nil {
			return err
		}
		// As json.Marshal writes a RawMessage in a list: compacted, with
		// <, > and & escaped.
		if b, err = json.Marshal(b); err != nil {
			return err
		}
		sep := byte(',')
		if bw == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			bw = bufio.NewWriterSize(w, 32<<10)
			sep = '['
		}
		bw.WriteByte(sep)
		_, err = bw.Write(b)
		return err
	})
	if err != nil && bw == nil {
		return err
	}
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if bw == nil {
		writeJSON(w, http.StatusOK, []json.RawMessage{})
		return nil
	}
	bw.WriteString("]\n")
	if err := bw.Flush(); err != nil {
		panic(http.ErrAbortHandler)
	}
	return nil
}

// gateImageSummary applies dockerd's version rules to one entry of GET
// /images/json: <none> placeholders below 1.43, VirtualSize below 1.44,
// Descriptor from 1.48, Containers = -1 below 1.51.
func gateImageSummary(img image.Summary, version string) (json.RawMessage, error) {
	if versionLess(version, "1.43") {
		if len(img.RepoTags) == 0 && len(img.RepoDigests) == 0 {
			img.RepoTags = []string{"<none>:<none>"}
			img.RepoDigests = []string{"<none>@<none>"}
		}
	}
	if img.RepoTags == nil {
		img.RepoTags = []string{}
	}
	if img.RepoDigests == nil {
		img.RepoDigests = []string{}
	}
	if versionLess(version, "1.48") {
		img.Descriptor = nil
	}
	if versionLess(version, "1.51") {
		img.Containers = -1
	}
	if !versionLess(version, "1.44") {
		return rawJSON(img), nil
	}
	m, err := toObject(img)
	if err != nil {
		return nil, err
	}
	m["VirtualSize"] = rawJSON(img.Size)
	return orderedObject(m, nil), nil
}

package server

import (
	"net/http"
	"strconv"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/volume"
)

// The prunes of objects wharfd does not have. `docker system prune` calls
// them (containers, networks, volumes with --volumes, then images, then the
// build cache) and stops at the first error, so without them it never
// reached the images. They answer as dockerd with none of these objects
// does: the query checked as dockerd checks it, then an empty report (the
// lists null, nothing reclaimed). dockerd also logs a prune event for each;
// wharfd does not, since nothing happened (docs/compatibility.md).

// Filters dockerd accepts on each prune (its *AcceptedFilters tables).
var (
	containerPruneFilters = []string{"label", "label!", "until"}
	networkPruneFilters   = []string{"label", "label!", "until"}
	// "all" from API 1.42 (below, dockerd prunes every volume anyway).
	volumePruneFilters = []string{"label", "label!", "all"}
)

func (s *Server) postContainersPrune(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := checkPruneFilters(r, containerPruneFilters...); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, container.PruneReport{})
	return nil
}

func (s *Server) postNetworksPrune(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := checkPruneFilters(r, networkPruneFilters...); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, network.PruneReport{})
	return nil
}

func (s *Server) postVolumesPrune(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := checkPruneFilters(r, volumePruneFilters...); err != nil {
		return err
	}
	f, _ := parseFilters(r) // checked above
	for v := range f["all"] {
		if _, err := strconv.ParseBool(v); err != nil {
			return invalidArg("invalid filter 'all=%s': invalid value", v)
		}
	}
	writeJSON(w, http.StatusOK, volume.PruneReport{})
	return nil
}

// postBuildPrune answers POST /build/prune. Its filters go to BuildKit,
// which ignores fields it does not know, so only their syntax is checked;
// the sizes must be integers, as dockerd parses them.
func (s *Server) postBuildPrune(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	if _, err := parseFilters(r); err != nil {
		return err
	}
	for _, k := range []string{"keep-storage", "reserved-space", "max-used-space", "min-free-space"} {
		if v := r.Form.Get(k); v != "" {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return invalidArg("%s is in bytes and expects an integer, got %v", k, v)
			}
		}
	}
	writeJSON(w, http.StatusOK, build.CachePruneReport{})
	return nil
}

// checkPruneFilters parses the query and refuses filters dockerd refuses.
func checkPruneFilters(r *http.Request, allowed ...string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	f, err := parseFilters(r)
	if err != nil {
		return err
	}
	return validateFilters(f, allowed...)
}

package server

import (
	"net/http"
)

// tarWriter sends the 200 and application/x-tar only with the first byte, so
// that an error before any output (no such image) is a normal error response.
type tarWriter struct {
	w       http.ResponseWriter
	started bool
}

func (t *tarWriter) Write(b []byte) (int, error) {
	if !t.started {
		t.started = true
		t.w.Header().Set("Content-Type", "application/x-tar")
		t.w.WriteHeader(http.StatusOK)
	}
	return t.w.Write(b)
}

func (s *Server) getImagesGet(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	names := r.Form["names"]
	if name, ok := vars["name"]; ok {
		names = []string{name}
	}
	if len(names) == 0 {
		return invalidArg("no image names given")
	}
	ps, err := platformsParam(r, "1.48")
	if err != nil {
		return err
	}
	tw := &tarWriter{w: w}
	err = s.backend.ExportImage(r.Context(), names, ps, tw)
	if err == nil {
		if !tw.started {
			_, _ = tw.Write(nil)
		}
		return nil
	}
	if !tw.started {
		return err
	}
	// Half a tar is already out and a tar has no error frame: abort the
	// connection so the client sees a failed transfer, not a short archive.
	s.log.WithError(err).Error("image export failed after the response started")
	panic(http.ErrAbortHandler)
}

func (s *Server) postImagesLoad(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	// dockerd's default is quiet when the parameter is absent.
	quiet := boolValueOrDefault(r, "quiet", true)
	ps, err := platformsParam(r, "1.48")
	if err != nil {
		return err
	}
	out := newStreamWriter(w, "application/json")
	if err := s.backend.LoadImage(r.Context(), r.Body, quiet, ps, out); err != nil {
		// dockerd reports load errors in-stream even before any output.
		_ = out.WriteMessage(errorMessage(err))
	}
	return out.finish(nil)
}

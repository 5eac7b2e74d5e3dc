package hostile

import (
	"net/http"
	"net/http/httputil"
	"net/url"
)

// HookProxy is a reverse proxy in front of a real registry that lets a test
// answer chosen requests itself (Before) and see how the registry answered
// the others (After): a destination that fails one upload mid-copy. The
// Host header is passed on unchanged, so the registry's upload Locations
// point back at the proxy.
type HookProxy struct{ front }

// NewHookProxy proxies to target (http://host:port). before, when set, is
// called first and answers the request itself by returning true; after,
// when set, is called with the registry's status once it answered.
func NewHookProxy(target string, before func(w http.ResponseWriter, r *http.Request) bool, after func(r *http.Request, status int)) (*HookProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	return &HookProxy{newFront(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before != nil && before(w, r) {
			return
		}
		if after == nil {
			rp.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		rp.ServeHTTP(sw, r)
		after(r, sw.status)
	}))}, nil
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

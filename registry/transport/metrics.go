package transport

import (
	"net/http"
	"time"
)

// Observer is told of every request (every attempt: retries count again)
// and every token look-up; registry.Observer is this interface.
type Observer interface {
	// RegistryRequest is one HTTP exchange with a registry or token
	// server, d its time to the response headers. status is 0 when there
	// was no answer.
	RegistryRequest(host, method string, status int, outcome string, d time.Duration)
	// CacheLookup is one look-up in a cache (here: CacheToken).
	CacheLookup(cache string, hit bool)
}

// Outcomes of a registry request.
const (
	OutcomeOK           = "ok"            // an answer below 400
	OutcomeHTTPError    = "http_error"    // an answer of 400 or more (a 401 challenge included)
	OutcomeNetworkError = "network_error" // no answer: refused, reset, timed out, TLS failed
	OutcomeCanceled     = "canceled"      // no answer because the caller gave up
)

// CacheToken: bearer and basic tokens per identity (tokencache.go).
const CacheToken = "token"

// roundTrip sends req through host e's transport and reports it: the one
// place every registry request passes (manifests, blobs, uploads, tokens,
// pings), below the retries, so each attempt is counted as the registry
// sees it.
func (t *hostTransports) roundTrip(e *hostEntry, req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := e.rt.RoundTrip(req)
	o := t.obs
	if o == nil {
		return resp, err
	}
	d := time.Since(start)
	switch {
	case err != nil && req.Context().Err() != nil:
		o.RegistryRequest(e.host, req.Method, 0, OutcomeCanceled, d)
	case err != nil:
		o.RegistryRequest(e.host, req.Method, 0, OutcomeNetworkError, d)
	case resp.StatusCode >= 400:
		o.RegistryRequest(e.host, req.Method, resp.StatusCode, OutcomeHTTPError, d)
	default:
		o.RegistryRequest(e.host, req.Method, resp.StatusCode, OutcomeOK, d)
	}
	return resp, err
}

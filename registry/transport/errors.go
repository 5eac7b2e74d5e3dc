package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// MaxErrorBody caps an error body: a distribution error document is a few
// hundred bytes; 64 KiB leaves room for verbose proxies and no more.
const MaxErrorBody = 64 << 10

const maxErrorBody = MaxErrorBody

var (
	// ErrUpstream: the registry answered something malformed or
	// self-contradictory — the registry's fault, never the client's: 502.
	// registry.ErrUpstream is this error.
	ErrUpstream error = upstreamError{}
	// ErrDigestMismatch: content does not hash to the digest it was asked
	// by or announced with (also ErrUpstream). registry.ErrDigestMismatch
	// is this error.
	ErrDigestMismatch = errors.New("digest mismatch")
)

type upstreamError struct{}

func (upstreamError) Error() string   { return "bad answer from the registry" }
func (upstreamError) HTTPStatus() int { return http.StatusBadGateway }

// InvalidDocument is the error of a registry that served something that
// contradicts itself or its descriptor.
func InvalidDocument(host, format string, args ...any) error {
	return fmt.Errorf("registry %s: %s%.0w", host, fmt.Sprintf(format, args...), ErrUpstream)
}

// DigestMismatch is content that does not hash to what was asked for.
func DigestMismatch(host, what string, want, got fmt.Stringer) error {
	return fmt.Errorf("registry %s: %s digest mismatch: want %s, got %s%.0w%.0w", host, what, want, got, ErrDigestMismatch, ErrUpstream)
}

// Reason extracts a human reason from an error body: the
// distribution {"errors":[…]} form or the token servers' {"details":…}.
func Reason(body []byte) string {
	var b struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
		Details string `json:"details"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	var parts []string
	for _, e := range b.Errors {
		if e.Message != "" {
			parts = append(parts, e.Message)
		} else if e.Code != "" {
			parts = append(parts, strings.ToLower(strings.ReplaceAll(e.Code, "_", " ")))
		}
	}
	for _, s := range []string{b.Details, b.Message, b.Error} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

// mustLRU is a simplelru (the caller holds its own lock) of a positive
// constant size.
func mustLRU[K comparable, V any](size int) *simplelru.LRU[K, V] {
	c, err := simplelru.NewLRU[K, V](size, nil)
	if err != nil {
		panic(err)
	}
	return c
}

// ErrorResponse is an answer of 400 or more from a registry or its token
// server: the request, the status and the distribution error document
// ({"errors":[…]}) it carried, if any.
type ErrorResponse struct {
	Method     string
	URL        *url.URL
	StatusCode int
	Errors     Errors
}

// ErrorCode is one entry of a distribution error document.
type ErrorCode struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Detail  any    `json:"detail,omitempty"`
}

// Errors is the "errors" list of a distribution error document.
type Errors []ErrorCode

// The distribution error codes wharf tells apart.
const (
	CodeBlobUnknown     = "BLOB_UNKNOWN"
	CodeManifestUnknown = "MANIFEST_UNKNOWN"
	CodeNameUnknown     = "NAME_UNKNOWN"
	CodeUnauthorized    = "UNAUTHORIZED"
	CodeDenied          = "DENIED"
)

// Error is "code: message[: detail]", the code in lower case with spaces.
func (e ErrorCode) Error() string {
	code := strings.ToLower(strings.ReplaceAll(e.Code, "_", " "))
	switch {
	case e.Message == "":
		return code
	case e.Detail == nil:
		return code + ": " + e.Message
	}
	return fmt.Sprintf("%s: %s: %v", code, e.Message, e.Detail)
}

func (errs Errors) Error() string {
	if len(errs) == 0 {
		return "<nil>"
	}
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

func (e *ErrorResponse) Error() string {
	msg := http.StatusText(e.StatusCode)
	if len(e.Errors) > 0 {
		msg = e.Errors.Error()
	}
	u := ""
	if e.URL != nil {
		u = e.URL.Redacted()
	}
	return fmt.Sprintf("%s %q: response status code %d: %s", e.Method, u, e.StatusCode, msg)
}

// ResponseError is the error of resp, whose body (read, capped, by the
// caller) may hold a distribution error document.
func ResponseError(method string, resp *http.Response, body []byte) error {
	e := &ErrorResponse{Method: method, StatusCode: resp.StatusCode}
	if resp.Request != nil {
		e.URL = resp.Request.URL
	}
	var b struct {
		Errors Errors `json:"errors"`
	}
	if json.Unmarshal(body, &b) == nil {
		e.Errors = b.Errors
	}
	return e
}

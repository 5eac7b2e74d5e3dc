package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/containerd/errdefs"
)

// maxErrorBody caps how much of an error response is read (64 KiB): an error
// message is one line, and a misbehaving server must not make the CLI buffer
// an endless body.
const maxErrorBody = 64 << 10

// Error is an error response from the daemon.
type Error struct {
	StatusCode int
	// Message is the daemon's message, verbatim.
	Message string
}

// Error renders the error the way the docker CLI does.
func (e *Error) Error() string {
	return "Error response from daemon: " + e.Message
}

// Unwrap gives the errdefs class of the status code, so
// errdefs.IsNotFound(err) and errors.Is(err, errdefs.ErrNotFound) work.
func (e *Error) Unwrap() error {
	switch e.StatusCode {
	case http.StatusNotFound:
		return errdefs.ErrNotFound
	case http.StatusBadRequest:
		return errdefs.ErrInvalidArgument
	case http.StatusConflict:
		return errdefs.ErrConflict
	case http.StatusUnauthorized:
		return errdefs.ErrUnauthenticated
	case http.StatusForbidden:
		return errdefs.ErrPermissionDenied
	case http.StatusServiceUnavailable:
		return errdefs.ErrUnavailable
	case http.StatusNotImplemented:
		return errdefs.ErrNotImplemented
	}
	return errdefs.ErrUnknown
}

// StatusCode returns the HTTP status of a daemon error, or 0.
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// IsNotFound reports whether err is a daemon 404.
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// decodeError builds an *Error from a non-2xx response. JSON bodies give the
// message; anything else (a proxy's text page) is used trimmed.
func decodeError(resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return fmt.Errorf("reading error response (status %d): %w", resp.StatusCode, err)
	}
	msg := ""
	var m struct {
		Message *string `json:"message"`
	}
	if json.Unmarshal(body, &m) == nil && m.Message != nil {
		msg = *m.Message
	} else {
		msg = strings.TrimSpace(string(body))
	}
	if msg == "" {
		msg = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return &Error{StatusCode: resp.StatusCode, Message: msg}
}

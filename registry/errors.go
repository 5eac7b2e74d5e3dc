package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/containerd/errdefs"
	"github.com/wharfproject/wharf/imagespec"
	"github.com/wharfproject/wharf/registry/transport"
)

// maxErrorBody caps an error body (transport.MaxErrorBody).
const maxErrorBody = transport.MaxErrorBody

// The typed errors of this package. Every error of one of these kinds wraps
// the sentinel (and the errdefs class that gives it its HTTP status), so
// callers test with errors.Is, never by the text.
var (
	// ErrNoMatchingPlatform: an index has no manifest for the platform
	// asked for (also errdefs.ErrNotFound; the message names the platforms
	// that exist).
	// It is imagespec's sentinel, which imagespec.SelectManifest wraps.
	ErrNoMatchingPlatform = imagespec.ErrNoMatchingPlatform
	// ErrBlocked: the registry is blocked by the daemon's configuration
	// (also errdefs.ErrPermissionDenied).
	ErrBlocked = errors.New("registry is blocked")
	// ErrUnauthorized: the registry answered 401 or 403 (also
	// errdefs.ErrUnauthenticated).
	ErrUnauthorized = errors.New("registry refused the request")
	// ErrDenied: among ErrUnauthorized, the registry denied access to the
	// repository or does not know it for this identity (DENIED, 403, or an
	// anonymous 401): dockerd words a pull of it "pull access denied".
	ErrDenied = errors.New("registry denied access")
	// ErrUpstream: the registry answered something malformed or
	// self-contradictory — the registry's fault, never the client's: 502.
	ErrUpstream = transport.ErrUpstream
	// ErrDigestMismatch: content does not hash to the digest it was asked
	// by or announced with (also ErrUpstream).
	ErrDigestMismatch = transport.ErrDigestMismatch
)

func blockedError(index string) error {
	return fmt.Errorf("registry %s is blocked%.0w%.0w", index, ErrBlocked, errdefs.ErrPermissionDenied)
}

// responseError is the error of a response of 400 or more whose body
// (read, capped) may hold a distribution error document.
func responseError(method string, resp *http.Response, body []byte) error {
	return transport.ResponseError(method, resp, body)
}

// isClassified reports whether err already carries an errdefs class.
func isClassified(err error) bool {
	return errdefs.IsNotFound(err) || errdefs.IsInvalidArgument(err) || errdefs.IsUnauthorized(err) ||
		errdefs.IsUnavailable(err) || errdefs.IsPermissionDenied(err) || errdefs.IsConflict(err) ||
		errdefs.IsDataLoss(err) || errdefs.IsNotImplemented(err) || errors.Is(err, ErrUpstream)
}

// classify attaches an errdefs class to an error from talking to host:
// 404 and the *_UNKNOWN codes are NotFound; 401/403 Unauthenticated with the
// registry's message; refused connections, timeouts, 429 and 5xx (after
// retries) Unavailable naming the host.
func classify(err error, host string) error {
	if err == nil || isClassified(err) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var er *transport.ErrorResponse
	if errors.As(err, &er) {
		msg := errorsMessage(er.Errors)
		if len(er.Errors) == 0 {
			msg = strings.ToLower(http.StatusText(er.StatusCode))
		}
		switch {
		case er.StatusCode == http.StatusNotFound || hasCode(er.Errors, transport.CodeNameUnknown, transport.CodeManifestUnknown, transport.CodeBlobUnknown):
			return fmt.Errorf("%s%.0w", msg, errdefs.ErrNotFound)
		case er.StatusCode == http.StatusUnauthorized || er.StatusCode == http.StatusForbidden:
			if len(er.Errors) == 0 {
				msg = "authentication required"
				if er.StatusCode == http.StatusForbidden {
					msg = "access denied"
				}
			}
			if er.StatusCode == http.StatusForbidden || hasCode(er.Errors, transport.CodeDenied, transport.CodeNameUnknown) {
				return fmt.Errorf("registry %s: %s%.0w%.0w%.0w", host, msg, ErrDenied, ErrUnauthorized, errdefs.ErrUnauthenticated)
			}
			return fmt.Errorf("registry %s: %s%.0w%.0w", host, msg, ErrUnauthorized, errdefs.ErrUnauthenticated)
		case er.StatusCode == http.StatusTooManyRequests || er.StatusCode >= 500:
			return fmt.Errorf("registry %s is unavailable: %s%.0w", host, err, errdefs.ErrUnavailable)
		case er.StatusCode == http.StatusBadRequest:
			return fmt.Errorf("registry %s: %s%.0w", host, msg, errdefs.ErrInvalidArgument)
		}
		return fmt.Errorf("registry %s: %w", host, err)
	}
	if errors.Is(err, transport.ErrNoBasicCredential) {
		return fmt.Errorf("registry %s: authentication required%.0w%.0w", host, ErrUnauthorized, errdefs.ErrUnauthenticated)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("registry %s is unavailable: %w%.0w", host, err, errdefs.ErrUnavailable)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return fmt.Errorf("registry %s is unavailable: %w%.0w", host, err, errdefs.ErrUnavailable)
	}
	// A connection refused or cut mid-answer, however deeply wrapped.
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("registry %s is unavailable: %w%.0w", host, err, errdefs.ErrUnavailable)
	}
	return fmt.Errorf("registry %s: %w", host, err)
}

func hasCode(errs transport.Errors, codes ...string) bool {
	for _, e := range errs {
		for _, c := range codes {
			if e.Code == c {
				return true
			}
		}
	}
	return false
}

// invalidDocument is the error of a registry that served something that
// contradicts itself or its descriptor.
func invalidDocument(host, format string, args ...any) error {
	return transport.InvalidDocument(host, format, args...)
}

// digestMismatch is content that does not hash to what was asked for.
func digestMismatch(host, what string, want, got fmt.Stringer) error {
	return transport.DigestMismatch(host, what, want, got)
}

// errorsMessage words registry errors as "code: message" without their
// detail (a structure dump, e.g. the scope that was refused).
func errorsMessage(errs transport.Errors) string {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		e.Detail = nil
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

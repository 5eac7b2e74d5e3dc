package transport

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
)

// Errors get their class once, here, where requests meet the wire: what
// this package returns — from Client.Do, Stack.Do, Stack.SetUp and
// Stack.Scheme, from any response body's Read, and from StatusError for an
// answer the caller did not expect — is classified, so no caller
// classifies again. The classes are containerd's errdefs (api/server maps
// them to statuses, once) plus ErrUpstream (502) and the sentinels below.

var (
	// ErrUnauthorized: the registry answered 401 or 403 (also
	// errdefs.ErrUnauthenticated). registry.ErrUnauthorized is this error.
	ErrUnauthorized = errors.New("registry refused the request")
	// ErrDenied: among ErrUnauthorized, the registry denied access to the
	// repository or does not know it for this identity (DENIED, 403, or an
	// anonymous 401): dockerd words a pull of it "pull access denied".
	// registry.ErrDenied is this error.
	ErrDenied = errors.New("registry denied access")
)

// hostError marks an error classified for a host that has no errdefs class
// (a status such as 409 or 418 that says nothing of whose fault it is), so
// that it is worded once, however often it passes through classify.
type hostError struct{ err error }

func (e *hostError) Error() string { return e.err.Error() }
func (e *hostError) Unwrap() error { return e.err }

// classified reports whether err already has its class: an errdefs one
// (errdefs.Resolve, the library's own list of classes), a status of its own
// (ErrUpstream's 502), or none on purpose (hostError).
func classified(err error) bool {
	switch errdefs.Resolve(err) {
	case errdefs.ErrUnknown, context.DeadlineExceeded, context.Canceled:
		// Resolve also finds the context's errors: a deadline is still
		// to be worded as the registry being unavailable.
	default:
		return true
	}
	var st interface{ HTTPStatus() int }
	var he *hostError
	return errors.As(err, &st) || errors.As(err, &he)
}

// StatusError is the classified error of an answer the caller did not
// expect; body is its body, read by the caller within MaxErrorBody.
func StatusError(method string, resp *http.Response, body []byte, host string) error {
	return classify(ResponseError(method, resp, body), host)
}

// classify gives err from talking to host its class (the registry's
// answer, an *ErrorResponse, stays in the chain: a caller may still ask
// for its status, as the referrers API's 404 is asked): 404 and the *_UNKNOWN
// codes are NotFound; 401/403 Unauthenticated with the registry's message;
// refused connections, timeouts, 429 and 5xx (after retries) Unavailable
// naming the host; a cancelled request stays context.Canceled.
func classify(err error, host string) error {
	if err == nil || classified(err) || errors.Is(err, context.Canceled) {
		return err
	}
	var er *ErrorResponse
	if errors.As(err, &er) {
		msg := errorsMessage(er.Errors)
		if len(er.Errors) == 0 {
			msg = strings.ToLower(http.StatusText(er.StatusCode))
		}
		switch {
		case er.StatusCode == http.StatusNotFound || hasCode(er.Errors, CodeNameUnknown, CodeManifestUnknown, CodeBlobUnknown):
			return fmt.Errorf("%s%.0w%.0w", msg, errdefs.ErrNotFound, er)
		case er.StatusCode == http.StatusUnauthorized || er.StatusCode == http.StatusForbidden:
			if len(er.Errors) == 0 {
				msg = "authentication required"
				if er.StatusCode == http.StatusForbidden {
					msg = "access denied"
				}
			}
			if er.StatusCode == http.StatusForbidden || hasCode(er.Errors, CodeDenied, CodeNameUnknown) {
				return fmt.Errorf("registry %s: %s%.0w%.0w%.0w%.0w", host, msg, ErrDenied, ErrUnauthorized, errdefs.ErrUnauthenticated, er)
			}
			return fmt.Errorf("registry %s: %s%.0w%.0w%.0w", host, msg, ErrUnauthorized, errdefs.ErrUnauthenticated, er)
		case er.StatusCode == http.StatusTooManyRequests || er.StatusCode >= 500:
			return fmt.Errorf("registry %s is unavailable: %s%.0w%.0w", host, err, errdefs.ErrUnavailable, er)
		case er.StatusCode == http.StatusBadRequest:
			return fmt.Errorf("registry %s: %s%.0w%.0w", host, msg, errdefs.ErrInvalidArgument, er)
		}
		return &hostError{fmt.Errorf("registry %s: %w", host, err)}
	}
	var be *BackoffError
	if errors.As(err, &be) {
		return fmt.Errorf("registry %s is unavailable: %w%.0w", host, be, errdefs.ErrUnavailable)
	}
	if errors.Is(err, ErrNoBasicCredential) {
		return fmt.Errorf("registry %s: authentication required%.0w%.0w", host, ErrUnauthorized, errdefs.ErrUnauthenticated)
	}
	var ne net.Error
	var oe *net.OpError
	// A timeout, a connection refused or cut mid-answer, however deeply
	// wrapped.
	if errors.As(err, &ne) || errors.As(err, &oe) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("registry %s is unavailable: %w%.0w", host, err, errdefs.ErrUnavailable)
	}
	return &hostError{fmt.Errorf("registry %s: %w", host, err)}
}

func hasCode(errs Errors, codes ...string) bool {
	for _, e := range errs {
		for _, c := range codes {
			if e.Code == c {
				return true
			}
		}
	}
	return false
}

// errorsMessage words registry errors as "code: message" without their
// detail (a structure dump, e.g. the scope that was refused).
func errorsMessage(errs Errors) string {
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		e.Detail = nil
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

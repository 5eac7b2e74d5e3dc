package registry

import (
	"errors"
	"fmt"

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
	// errdefs.ErrUnauthenticated). Errors get their class where requests
	// meet the wire, in registry/transport (classify.go).
	ErrUnauthorized = transport.ErrUnauthorized
	// ErrDenied: among ErrUnauthorized, the registry denied access to the
	// repository or does not know it for this identity (DENIED, 403, or an
	// anonymous 401): dockerd words a pull of it "pull access denied".
	ErrDenied = transport.ErrDenied
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

// invalidDocument is the error of a registry that served something that
// contradicts itself or its descriptor.
func invalidDocument(host, format string, args ...any) error {
	return transport.InvalidDocument(host, format, args...)
}

// digestMismatch is content that does not hash to what was asked for.
func digestMismatch(host, what string, want, got fmt.Stringer) error {
	return transport.DigestMismatch(host, what, want, got)
}

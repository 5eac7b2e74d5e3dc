package mirror

import (
	"context"
	"errors"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	"github.com/wharfproject/wharf/graph/distribution"
)

// hostOf is the registry host of NAME[:TAG] as sync words images.
func hostOf(image string) string {
	if n, err := reference.ParseNormalizedNamed(image); err == nil {
		return reference.Domain(n)
	}
	h, _, _ := strings.Cut(image, "/")
	return h
}

// ErrorClass names err's class for machines (a sync failure's Class):
// from the typed errors, never the text.
func ErrorClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, distribution.ErrDenied):
		return "denied"
	case errors.Is(err, distribution.ErrDigestMismatch):
		return "digest-mismatch"
	case errors.Is(err, distribution.ErrUpstream):
		return "upstream"
	case errdefs.IsNotFound(err):
		return "not-found"
	case errdefs.IsUnauthorized(err):
		return "unauthorized"
	case errdefs.IsPermissionDenied(err):
		return "denied"
	case errdefs.IsInvalidArgument(err):
		return "invalid-argument"
	case errdefs.IsNotImplemented(err):
		return "not-implemented"
	case errdefs.IsConflict(err), errdefs.IsAlreadyExists(err):
		return "conflict"
	case errdefs.IsUnavailable(err):
		return "unavailable"
	}
	return "unknown"
}

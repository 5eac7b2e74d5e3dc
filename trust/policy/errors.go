package policy

import (
	"errors"
	"fmt"
	"strconv"
)

// The kinds of load error. Every error Load and Parse return is an *Error
// whose Err wraps one of these, so callers and tests use errors.Is and read
// Error.Path instead of matching text.
var (
	ErrSyntax       = errors.New("invalid JSON")
	ErrUnknownKey   = errors.New("unknown key")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrUnknownType  = errors.New("unknown type")
	ErrMissing      = errors.New("missing")
	ErrConflict     = errors.New("conflicting fields")
	ErrInvalid      = errors.New("invalid value")
	ErrScope        = errors.New("invalid scope")
	ErrFile         = errors.New("cannot read file")
	ErrTooLarge     = errors.New("too large")
	ErrRelativePath = errors.New("path is not absolute")
	ErrNoVerifier   = errors.New("no verifier")
)

// Error is a policy that does not load. Path is where in the file the
// problem is, in a JSON-path-like form: `transports.docker."quay.io"[0].keyPath`
// ("" for the file as a whole).
type Error struct {
	File string // the policy file, when loaded from one
	Path string
	Err  error
}

func (e *Error) Error() string {
	s := "policy"
	if e.File != "" {
		s += " " + strconv.Quote(e.File)
	}
	if e.Path != "" {
		s += ": " + e.Path
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// errAt builds an *Error at path wrapping kind with a detail sentence.
func errAt(path string, kind error, format string, args ...any) error {
	detail := fmt.Sprintf(format, args...)
	if detail == "" {
		return &Error{Path: path, Err: kind}
	}
	return &Error{Path: path, Err: fmt.Errorf("%w: %s", kind, detail)}
}

// keyPath appends an object key to a JSON path, quoting it unless it is a
// plain identifier.
func keyPath(path, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			plain = false
			break
		}
	}
	if !plain {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

package policy

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

const (
	// MaxPolicySize caps the policy file. A real policy is a few KiB; inline
	// keyData of a handful of keys stays far below this. The cap bounds what
	// a mistaken path (a log, a device) makes the daemon read and parse.
	MaxPolicySize = 4 << 20
	// MaxKeyFileSize caps each referenced key, keyring or certificate file:
	// a PEM bundle of a few hundred CA certificates fits; anything larger is
	// not a trust root, and every byte is kept in memory for the policy's
	// lifetime.
	MaxKeyFileSize = 1 << 20
)

// Policy is a loaded policy: its docker transport's scopes, its default,
// the verifiers its requirements built, and its revision.
type Policy struct {
	def      Requirements
	docker   map[string]Requirements
	archives map[string]Requirements // transports.{docker,oci}-archive[""]: transport.go
	ignored  []string
	revision string
}

// Revision is "sha256:<hex>" over the policy file's bytes and every file it
// references (path and bytes, in the order read), so that rotating a key
// file changes it even when policy.json does not change.
func (p *Policy) Revision() string { return p.revision }

// IgnoredTransports lists the transports the file configures other than
// docker and the archive transports (docker-daemon, atomic, oci, …): they
// are parsed and validated but wharf never applies them.
func (p *Policy) IgnoredTransports() []string { return p.ignored }

// Load reads the policy at path (at most MaxPolicySize bytes) and parses it.
func Load(path string, opts Options) (*Policy, error) {
	data, err := readCapped(path, MaxPolicySize)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	p, err := Parse(data, filepath.Dir(path), opts)
	if e, ok := err.(*Error); ok {
		e.File = path
	}
	return p, err
}

// Parse parses a policy. dir is the directory of the file it came from;
// it is only reported in errors, because referenced files must be named by
// absolute paths (see doc.go).
func Parse(data []byte, dir string, opts Options) (*Policy, error) {
	if len(data) > MaxPolicySize {
		return nil, errAt("", ErrTooLarge, "the policy is %d bytes, more than %d", len(data), MaxPolicySize)
	}
	l := &loader{dir: dir, opts: opts, hash: sha256.New()}
	l.record("", data)
	var defRaw, transRaw json.RawMessage
	seen := map[string]bool{}
	if err := object("", data, func(k string) any {
		seen[k] = true
		switch k {
		case "default":
			return &defRaw
		case "transports":
			return &transRaw
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if !seen["default"] {
		return nil, errAt("default", ErrMissing, "the top-level \"default\" is required")
	}
	p := &Policy{docker: map[string]Requirements{}, archives: map[string]Requirements{}}
	var err error
	if p.def, err = l.parseRequirements("default", defRaw); err != nil {
		return nil, err
	}
	if seen["transports"] {
		if err := l.parseTransports(p, transRaw); err != nil {
			return nil, err
		}
	}
	p.revision = "sha256:" + hex.EncodeToString(l.hash.Sum(nil))
	return p, nil
}

func (l *loader) parseTransports(p *Policy, data []byte) error {
	raws := map[string]*json.RawMessage{}
	if err := object("transports", data, func(k string) any {
		r := new(json.RawMessage)
		raws[k] = r
		return r
	}); err != nil {
		return err
	}
	// Parse in a fixed order, so that errors and the revision's file order
	// do not depend on map iteration.
	for _, name := range sortedKeys(raws) {
		path := keyPath("transports", name)
		scopes := map[string]*json.RawMessage{}
		if err := object(path, *raws[name], func(k string) any {
			r := new(json.RawMessage)
			scopes[k] = r
			return r
		}); err != nil {
			return err
		}
		applied := name == "docker" || archiveTransport(name)
		if !applied {
			p.ignored = append(p.ignored, name)
		}
		for _, scope := range sortedKeys(scopes) {
			spath := keyPath(path, scope)
			if name == "docker" {
				if why, ok := validateScope(scope); !ok {
					return errAt(spath, ErrScope, "scope %q: %s", scope, why)
				}
			}
			sub := l
			if !applied {
				sub = &loader{dir: l.dir, syntaxOnly: true}
			}
			reqs, err := sub.parseRequirements(spath, *scopes[scope])
			if err != nil {
				return err
			}
			switch {
			case name == "docker":
				// Host names are case-insensitive (RFC 4343) and For
				// folds the name's host: so is the scope's, or
				// "LOCALHOST:5000/app" would never match and its image
				// would fall to a more general scope. Two keys that
				// differ only there are one scope written twice.
				folded := foldScopeHost(scope)
				if _, dup := p.docker[folded]; dup {
					return errAt(spath, ErrDuplicateKey, "scope %q is %q, which appears twice (host names ignore case)", scope, folded)
				}
				p.docker[folded] = reqs
			case applied && scope == ScopeTransportDefault:
				p.archives[name] = reqs
			}
		}
	}
	sort.Strings(p.ignored)
	return nil
}

// loader carries what parsing needs beyond the bytes.
type loader struct {
	dir  string
	opts Options
	hash interface {
		io.Writer
		Sum([]byte) []byte
	}
	// syntaxOnly parses other transports' requirements for their syntax:
	// no file is read and no verifier is built for what is never applied.
	syntaxOnly bool
}

// record adds a named byte string to the revision, length-prefixed so that
// no two sequences of files hash alike.
func (l *loader) record(name string, data []byte) {
	if l.hash == nil {
		return
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(name)))
	l.hash.Write(n[:])
	io.WriteString(l.hash, name)
	binary.BigEndian.PutUint64(n[:], uint64(len(data)))
	l.hash.Write(n[:])
	l.hash.Write(data)
}

// readSource reads a referenced file (absolute path, at most
// MaxKeyFileSize bytes). containers/image reads these with os.ReadFile,
// so a relative path there is relative to the working directory of
// whichever process evaluates the policy; for a daemon that is arbitrary,
// so wharf requires absolute paths.
func (l *loader) readSource(path, file string) (Source, error) {
	if file == "" {
		return Source{}, errAt(path, ErrInvalid, "empty path")
	}
	if !filepath.IsAbs(file) {
		return Source{}, errAt(path, ErrRelativePath, "%q is relative (the policy is in %s); name files by absolute path", file, l.dir)
	}
	if l.syntaxOnly {
		return Source{Path: file}, nil
	}
	data, err := readCapped(file, MaxKeyFileSize)
	if err != nil {
		return Source{}, &Error{Path: path, Err: err}
	}
	l.record(file, data)
	return Source{Path: file, Data: data}, nil
}

// readCapped reads at most limit bytes of file; a longer file is an error
// wrapping ErrTooLarge, an unreadable one ErrFile, both naming the file.
func readCapped(file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFile, err)
	}
	defer f.Close()
	// Only a regular file: a FIFO or a character device (/dev/stdin, a
	// tty) would block Load or read without end.
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrFile, file)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFile, file, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, file, limit)
	}
	return data, nil
}

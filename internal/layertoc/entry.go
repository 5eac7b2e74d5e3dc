package layertoc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	digest "github.com/opencontainers/go-digest"
)

// rawEntry is a TOC entry as both formats write it: eStargz's TOCEntry
// and containers/storage's minimal.FileMetadata share these names.
type rawEntry struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Size        int64  `json:"size"`
	ModTime     string `json:"modtime"`
	LinkName    string `json:"linkName"`
	Mode        int64  `json:"mode"`
	UID         int    `json:"uid"`
	GID         int    `json:"gid"`
	Offset      int64  `json:"offset"`
	EndOffset   int64  `json:"endOffset"`   // zstd:chunked
	InnerOffset int64  `json:"innerOffset"` // eStargz
	DevMajor    int64  `json:"devMajor"`
	DevMinor    int64  `json:"devMinor"`
	Digest      string `json:"digest"`
	ChunkOffset int64  `json:"chunkOffset"`
	ChunkSize   int64  `json:"chunkSize"`
	ChunkDigest string `json:"chunkDigest"`
}

// decodeEntries reads a TOC JSON object {"version": 1, "entries": [...]}
// from r, handing each entry to fn as it is decoded, so that the entry
// cap holds before the list is built. Other keys are skipped.
func decodeEntries(r io.Reader, lim Limits, fn func(i int, e *rawEntry) error) error {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	version, n := 0, 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalid("TOC JSON: %v", err)
		}
		switch tok {
		case "version":
			if err := dec.Decode(&version); err != nil {
				return invalid("TOC JSON version: %v", err)
			}
		case "entries":
			if err := expectDelim(dec, '['); err != nil {
				return err
			}
			for dec.More() {
				if n >= lim.Entries {
					return tooLarge("TOC has more than %d entries", lim.Entries)
				}
				var e rawEntry
				if err := dec.Decode(&e); err != nil {
					return invalid("TOC entry %d: %v", n, err)
				}
				if err := fn(n, &e); err != nil {
					return err
				}
				n++
			}
			if err := expectDelim(dec, ']'); err != nil {
				return err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return invalid("TOC JSON: %v", err)
			}
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("TOC JSON: data after the object")
	}
	if version != 1 {
		return invalid("TOC version %d, want 1", version)
	}
	return nil
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return invalid("TOC JSON: %v", err)
	}
	if tok != d {
		return invalid("TOC JSON: %v where %v was expected", tok, d)
	}
	return nil
}

// cleanPath makes a TOC name an absolute path within the layer. Names
// that climb out (../x, a/../../x), absolute names and names with NUL
// are refused: the producers (the eStargz and zstd:chunked writers)
// copy tar names, and a tar whose names do that is hostile or broken.
func cleanPath(name string, lim Limits) (string, error) {
	if len(name) > lim.PathLen {
		return "", tooLarge("entry name of %d bytes (limit %d)", len(name), lim.PathLen)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", invalid("entry name %q holds a NUL byte", name)
	}
	if strings.HasPrefix(name, "/") {
		return "", invalid("entry name %q is absolute", name)
	}
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", invalid("entry name %q climbs out of the layer", name)
	}
	if name == "" {
		return "", invalid("entry with an empty name")
	}
	if c == "." {
		return "/", nil
	}
	return "/" + c, nil
}

// newEntry converts what both formats share; chunks are left to the
// format's folding.
func newEntry(e *rawEntry, lim Limits) (Entry, error) {
	p, err := cleanPath(e.Name, lim)
	if err != nil {
		return Entry{}, err
	}
	out := Entry{Path: p, UID: e.UID, GID: e.GID, Devmajor: e.DevMajor, Devminor: e.DevMinor}
	var typeBits fs.FileMode
	switch e.Type {
	case "reg":
		out.Type = TypeFile
	case "dir":
		out.Type, typeBits = TypeDir, fs.ModeDir
	case "symlink":
		out.Type, typeBits = TypeSymlink, fs.ModeSymlink
	case "hardlink":
		out.Type = TypeHardlink
	case "char":
		out.Type, typeBits = TypeChar, fs.ModeDevice|fs.ModeCharDevice
	case "block":
		out.Type, typeBits = TypeBlock, fs.ModeDevice
	case "fifo":
		out.Type, typeBits = TypeFifo, fs.ModeNamedPipe
	default:
		return Entry{}, invalid("entry %q has type %q", e.Name, e.Type)
	}
	if e.UID < 0 || e.GID < 0 || e.Size < 0 || e.DevMajor < 0 || e.DevMinor < 0 || e.Mode < 0 {
		return Entry{}, invalid("entry %q has a negative uid, gid, size, mode or device number", e.Name)
	}
	out.Mode = typeBits | tarMode(e.Mode)
	if out.Type == TypeFile {
		out.Size = e.Size
	}
	// Both writers omit a modtime at the Unix epoch (eStargz) or zero
	// (zstd:chunked); a tar header always has one, and it is the epoch.
	out.ModTime = time.Unix(0, 0).UTC()
	if e.ModTime != "" {
		t, err := time.Parse(time.RFC3339Nano, e.ModTime)
		if err != nil {
			return Entry{}, invalid("entry %q has modtime %q: %v", e.Name, e.ModTime, err)
		}
		out.ModTime = t
	}
	switch out.Type {
	case TypeSymlink:
		if e.LinkName == "" || len(e.LinkName) > lim.PathLen || strings.IndexByte(e.LinkName, 0) >= 0 {
			return Entry{}, invalid("symlink %q has target %.100q (1 to %d bytes, no NUL)", e.Name, e.LinkName, lim.PathLen)
		}
		out.Linkname = e.LinkName
	case TypeHardlink:
		t, err := cleanPath(e.LinkName, lim)
		if err != nil {
			return Entry{}, fmt.Errorf("hardlink %q: %w", e.Name, err)
		}
		out.Linkname = t
	}
	if e.Digest != "" && out.Type == TypeFile {
		d, err := digest.Parse(e.Digest)
		if err != nil {
			return Entry{}, invalid("file %q has digest %.80q: %v", e.Name, e.Digest, err)
		}
		out.Digest = d
	}
	return out, nil
}

// tarMode maps a tar header's mode to Go's: permissions plus the
// setuid, setgid and sticky bits (c_ISUID, c_ISGID, c_ISVTX).
func tarMode(m int64) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

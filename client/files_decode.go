package client

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/wharfproject/wharf/api/types"
)

// filesDecoder decodes the lines of the files stream. The daemon writes
// each with encoding/json from types.FileEntry: one flat object, no
// spaces, its strings mostly free of escapes. Such a line is read in one
// pass here, about ten times faster than json.Unmarshal, which scans a
// line twice and allocates every string (a listing is thousands of lines
// to 10^6, and decoding was most of `wharf ls`'s own time). Anything else
// (an escape, a space, a key it does not know exactly, a value of another
// kind, a number out of range) is json.Unmarshal's to decide, so the
// answer is always the one json.Unmarshal gives: FuzzFilesDecoder holds
// the two to it.
type filesDecoder struct {
	// layer, source and modTime repeat on most lines (an image's build
	// stamps its files with one time): the last ones are reused instead
	// of allocated again.
	layer, source, modTime string
}

func (d *filesDecoder) decode(line []byte, e *types.FileEntry) error {
	*e = types.FileEntry{}
	if d.fast(line, e) {
		return nil
	}
	*e = types.FileEntry{}
	return json.Unmarshal(line, e)
}

// fast decodes line into e when it has the daemon's plain shape; false
// leaves e to be reset and decoded by json.Unmarshal.
func (d *filesDecoder) fast(line []byte, e *types.FileEntry) bool {
	p := line
	if len(p) < 2 || p[0] != '{' || p[len(p)-1] != '}' {
		return false
	}
	p = p[1 : len(p)-1]
	for len(p) > 0 {
		key, rest, ok := plainString(p)
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return false
		}
		p = rest[1:]
		var str []byte
		var num int64
		switch string(key) {
		case "Path", "Type", "ModTime", "Linkname", "Layer", "Digest", "Source":
			if str, p, ok = plainString(p); !ok {
				return false
			}
		case "Mode", "Uid", "Gid", "Size":
			if num, p, ok = plainInt(p); !ok {
				return false
			}
		default:
			return false
		}
		switch string(key) {
		case "Path":
			e.Path = string(str)
		case "Type":
			e.Type = fileType(str)
		case "ModTime":
			e.ModTime = reuse(&d.modTime, str)
		case "Linkname":
			e.Linkname = string(str)
		case "Layer":
			e.Layer = reuse(&d.layer, str)
		case "Digest":
			e.Digest = string(str)
		case "Source":
			e.Source = reuse(&d.source, str)
		case "Mode":
			if num < 0 || num > 1<<32-1 {
				return false
			}
			e.Mode = uint32(num)
		case "Uid":
			e.Uid = num
		case "Gid":
			e.Gid = num
		case "Size":
			e.Size = num
		}
		if len(p) == 0 {
			return true
		}
		if p[0] != ',' || len(p) == 1 {
			return false
		}
		p = p[1:]
	}
	return false // "{}": json.Unmarshal's
}

// reuse is b as a string: *last when equal (no allocation), else b,
// which becomes *last.
func reuse(last *string, b []byte) string {
	if *last != string(b) {
		*last = string(b)
	}
	return *last
}

// fileType is one of the FileType constants when s is one, so that a
// listing does not allocate its types.
func fileType(s []byte) string {
	for _, t := range []string{types.FileTypeFile, types.FileTypeDir, types.FileTypeSymlink, types.FileTypeHardlink, types.FileTypeChar, types.FileTypeBlock, types.FileTypeFifo} {
		if string(s) == t {
			return t
		}
	}
	return string(s)
}

// plainString reads a JSON string with no escape, no control character
// and valid UTF-8 at the start of p: its bytes and what follows it.
func plainString(p []byte) (s, rest []byte, ok bool) {
	if len(p) == 0 || p[0] != '"' {
		return nil, nil, false
	}
	end := bytes.IndexByte(p[1:], '"')
	if end < 0 {
		return nil, nil, false
	}
	s = p[1 : 1+end]
	ascii := true
	for _, c := range s {
		if c == '\\' || c < 0x20 {
			return nil, nil, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(s) {
		return nil, nil, false // json.Unmarshal writes U+FFFD for bad bytes
	}
	return s, p[2+end:], true
}

// plainInt reads a JSON integer at the start of p: an optional minus,
// then digits without a leading zero, within int64.
func plainInt(p []byte) (n int64, rest []byte, ok bool) {
	i := 0
	if i < len(p) && p[i] == '-' {
		i++
	}
	start := i
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		i++
	}
	if i == start || (p[start] == '0' && i-start > 1) {
		return 0, nil, false
	}
	if i < len(p) && (p[i] == '.' || p[i] == 'e' || p[i] == 'E') {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(p[:i]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return n, p[i:], true
}

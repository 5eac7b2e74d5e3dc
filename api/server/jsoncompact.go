package server

import (
	"bufio"
	"encoding/json"
	"errors"
)

// errInvalidJSON: writeCompactJSON was handed bytes that are not JSON.
var errInvalidJSON = errors.New("invalid JSON")

// writeCompactJSON writes b, a JSON value, to w exactly as json.Marshal
// writes it as a json.RawMessage: whitespace outside strings dropped, and
// <, >, &, U+2028 and U+2029 escaped as \u003c, \u003e, \u0026, \u2028
// and \u2029. It copies runs of b straight to w, so it holds nothing of
// its own, where json.Marshal would hold an encoder buffer grown by
// doubling and then a copy of it: three to four times a statement of up to
// 32 MiB.
func writeCompactJSON(w *bufio.Writer, b []byte) error {
	if !json.Valid(b) {
		return errInvalidJSON
	}
	const hex = "0123456789abcdef"
	inString, escaped := false, false
	start := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			// Valid JSON has these inside strings only, never after a
			// backslash.
			_, _ = w.Write(b[start:i])
			_, _ = w.Write([]byte{'\\', 'u', '0', '0', hex[c>>4], hex[c&0xF]})
			start = i + 1
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8:
			// U+2028 and U+2029 (E2 80 A8, E2 80 A9): inside strings only.
			_, _ = w.Write(b[start:i])
			_, _ = w.Write([]byte{'\\', 'u', '2', '0', '2', hex[b[i+2]&0xF]})
			i += 2
			start = i + 1
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			_, _ = w.Write(b[start:i])
			start = i + 1
		}
	}
	// bufio.Writer's error is sticky: this write returns any earlier one.
	_, err := w.Write(b[start:])
	return err
}

package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// checkDuplicateKeys refuses a JSON document in which an object names the
// same key twice. encoding/json keeps the last value without a word, so
// `"max-concurrent-downloads": -5` followed by `… 2` would start with 2 while
// the reverse order failed validation: the daemon's settings would depend on
// which line the user happened to write last. dockerd accepts such files
// (docs/compatibility.md lists the difference). b must be valid JSON.
func checkDuplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return checkValueKeys(dec, b, "")
}

// checkValueKeys reads one value from dec and checks its objects, at any
// depth (encoding/json has already refused documents nested deeper than
// its limit, so the recursion is bounded).
func checkValueKeys(dec *json.Decoder, b []byte, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]int64{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			name := key
			if path != "" {
				name = path + "." + key
			}
			at := dec.InputOffset()
			if first, dup := seen[key]; dup {
				return fmt.Errorf("duplicate key %q on line %d and line %d: give each key once", name, lineOf(b, first), lineOf(b, at))
			}
			seen[key] = at
			if err := checkValueKeys(dec, b, name); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		for dec.More() {
			if err := checkValueKeys(dec, b, path); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}

// lineOf is the 1-based line of byte offset off in b.
func lineOf(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return 1 + bytes.Count(b[:off], []byte{'\n'})
}

package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// object decodes a JSON object strictly, as containers/image's
// ParanoidUnmarshalJSONObject does: a duplicated key, a key field does not
// know, a value of the wrong type or trailing data is an error naming the
// key. field returns where a key's value goes, or nil for an unknown key.
// Values are decoded with encoding/json, so []byte takes standard base64.
func object(path string, data []byte, field func(key string) any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return errAt(path, ErrSyntax, "%v", err)
	}
	if t != json.Delim('{') {
		return errAt(path, ErrSyntax, "a JSON object is expected, not %s", describeToken(t))
	}
	seen := map[string]bool{}
	for {
		t, err := dec.Token()
		if err != nil {
			return errAt(path, ErrSyntax, "%v", err)
		}
		if t == json.Delim('}') {
			break
		}
		key, ok := t.(string)
		if !ok { // the decoder rejects a non-string key before this
			return errAt(path, ErrSyntax, "a key is expected, not %s", describeToken(t))
		}
		if seen[key] {
			return errAt(keyPath(path, key), ErrDuplicateKey, "%q appears twice", key)
		}
		seen[key] = true
		dst := field(key)
		if dst == nil {
			return errAt(keyPath(path, key), ErrUnknownKey, "%q is not a key here", key)
		}
		if err := dec.Decode(dst); err != nil {
			if _, ok := err.(*Error); ok {
				return err
			}
			return errAt(keyPath(path, key), ErrInvalid, "%v", err)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return errAt(path, ErrSyntax, "unexpected data after the JSON object")
	}
	return nil
}

func describeToken(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(v))
	case nil:
		return "null"
	case string:
		return "a string"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// array decodes a JSON array into raw elements.
func array(path string, data []byte) ([]json.RawMessage, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		return nil, errAt(path, ErrInvalid, "a JSON array is expected: %v", err)
	}
	return elems, nil
}

// typeOf reads the "type" key of an object without judging its other keys.
func typeOf(path string, data []byte) (string, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil || probe == nil {
		return "", errAt(path, ErrInvalid, "a JSON object is expected")
	}
	raw, ok := probe["type"]
	if !ok {
		return "", errAt(keyPath(path, "type"), ErrMissing, "\"type\" is required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errAt(keyPath(path, "type"), ErrInvalid, "\"type\" must be a string")
	}
	return s, nil
}

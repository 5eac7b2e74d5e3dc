package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
)

// compactAsMarshal is what json.Marshal writes of b as a RawMessage.
func compactAsMarshal(t *testing.T, b []byte) []byte {
	t.Helper()
	want, err := json.Marshal(json.RawMessage(b))
	if err != nil {
		t.Fatalf("json.Marshal(%q): %v", b, err)
	}
	return want
}

func writeCompact(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := bufio.NewWriterSize(&buf, 16)
	err := writeCompactJSON(w, b)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return buf.Bytes(), err
}

var compactCases = []string{
	`{}`,
	` { "a" : [ 1 , 2.5e3 , true , null ] } `,
	"{\n\t\"s\": \"<a href=\\\"x\\\"> & </a>\",\r\n \"t\": \"\\\\\", \"u\": \"\\\" \\n\"}\n",
	"{\"ls\": \"\u2028 and \u2029\", \"e\": \"\xe2\x80\xa7\"}",
	`{"nested":{"k":[{"x":" spaced  out "}]}}`,
	`"just a string with spaces "`,
}

func TestWriteCompactJSONIsMarshals(t *testing.T) {
	for _, in := range compactCases {
		got, err := writeCompact([]byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if want := compactAsMarshal(t, []byte(in)); !bytes.Equal(got, want) {
			t.Errorf("%q:\n got %s\nwant %s", in, got, want)
		}
	}
	if _, err := writeCompact([]byte(`{"a":`)); err == nil {
		t.Error("invalid JSON written")
	}
}

// The statement bodies come from registries: whatever valid JSON they
// hold, the answer's bytes are json.Marshal's.
func FuzzWriteCompactJSON(f *testing.F) {
	for _, c := range compactCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := writeCompact(b)
		if !json.Valid(b) {
			if err == nil {
				t.Fatalf("accepted %q", b)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if want := compactAsMarshal(t, b); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", b, got, want)
		}
	})
}

package client

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

var filesLines = []string{
	`{"Path":"/d1/f1","Type":"file","Mode":420,"Uid":0,"Gid":0,"Size":65536,"ModTime":"2026-12-05T19:41:46Z","Layer":"sha256:880108e9d197c2dcb2e6c04d46c19863c3aa8cf52ee7fc2559c768fc18d26b46","Digest":"sha256:42dd931464e373c9e2e95eb4e9202e20f14266a5b93795e9cc11be947261bdf2","Source":"stream"}`,
	`{"Path":"/d1","Type":"dir","Mode":2147484141,"Uid":0,"Gid":0,"Size":0,"ModTime":"2026-12-05T19:41:50Z","Layer":"sha256:88","Source":"stream"}`,
	`{"Path":"/bin/sh","Type":"symlink","Mode":134218239,"Uid":-1,"Gid":4294967296,"Size":4,"ModTime":"2026-12-05T19:41:50.5Z","Linkname":"busybox"}`,
	`{"Path":"/caf\u00e9","Type":"file"}`,       // an escape: json.Unmarshal's
	`{"Path":"/café","Type":"file"}`,            // UTF-8, plain
	`{"Path":"/bad\xff","Type":"file"}`,         // not UTF-8: json.Unmarshal's
	`{"Path":"/a", "Type":"file"}`,              // a space
	`{"path":"/lower","Type":"file"}`,           // a key matched without case
	`{"Path":"/x","Mode":-1}`,                   // out of uint32
	`{"Path":"/x","Size":1.5}`,                  // not an integer
	`{"Path":"/x","Size":012}`,                  // not JSON
	`{"Path":"/x","Size":99999999999999999999}`, // out of int64
	`{"Path":"/x","Extra":{"a":1}}`,             // a key it does not know
	`{"Path":"/x",}`, `{}`, `{"Path":"/x"`, `[]`, `null`, `{"Path":null}`,
	`{"Path":"/x","Path":"/y"}`, // the last wins, as json.Unmarshal has it
}

// The decoder's answer is json.Unmarshal's, whichever path it takes.
func TestFilesDecoderIsUnmarshal(t *testing.T) {
	var d filesDecoder
	for _, l := range filesLines {
		checkFilesDecoder(t, &d, []byte(l))
	}
	// The daemon's lines take the fast path.
	var e types.FileEntry
	if !d.fast([]byte(filesLines[0]), &e) || !d.fast([]byte(filesLines[2]), &e) {
		t.Fatal("the daemon's shape is not decoded in one pass")
	}
}

func checkFilesDecoder(t *testing.T, d *filesDecoder, line []byte) {
	t.Helper()
	var want types.FileEntry
	werr := json.Unmarshal(line, &want)
	var got types.FileEntry
	gerr := d.decode(line, &got)
	if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v (%v), json.Unmarshal %+v (%v)", line, got, gerr, want, werr)
	}
}

func FuzzFilesDecoder(f *testing.F) {
	for _, l := range filesLines {
		f.Add([]byte(l))
	}
	var d filesDecoder
	f.Fuzz(func(t *testing.T, line []byte) {
		checkFilesDecoder(t, &d, line)
	})
}

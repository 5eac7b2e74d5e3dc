package server

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/wharfproject/wharf/api/types"
)

func checkAppendFileEntry(t *testing.T, e types.FileEntry) {
	t.Helper()
	var want bytes.Buffer
	if err := json.NewEncoder(&want).Encode(e); err != nil {
		t.Fatal(err)
	}
	if got := appendFileEntry(nil, &e); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("appendFileEntry:\n%s\nencoding/json:\n%s", got, want.Bytes())
	}
}

// The bytes are encoding/json's, whichever path a string takes.
func TestAppendFileEntryIsEncodingJSON(t *testing.T) {
	for _, e := range []types.FileEntry{
		{Path: "/d1/f1", Type: "file", Mode: 420, Size: 65536, ModTime: "2026-12-05T19:41:46Z", Layer: "sha256:88", Digest: "sha256:42", Source: "stream"},
		{Path: "/d1", Type: "dir", Mode: 2147484141, ModTime: "2026-12-05T19:41:50.5Z"},
		{Path: "/bin/sh", Type: "symlink", Mode: 134218239, Uid: -1, Gid: 1 << 40, Size: 4, Linkname: "busybox"},
		{Path: "/café <&> \"q\" \\ \n\t\x01 \u2028 \xff", Type: "file"},
		{},
	} {
		checkAppendFileEntry(t, e)
	}
}

func FuzzAppendFileEntry(f *testing.F) {
	f.Add("/etc/passwd", "file", uint32(420), int64(0), int64(0), int64(11), "2026-12-05T19:41:46Z", "", "sha256:88", "sha256:42", "stream")
	f.Add("/a<b>&\"c\"\\\n\xff\u2028", "symlink", uint32(1<<31), int64(-1), int64(1<<40), int64(-5), "", "../x\x00", "", "", "")
	f.Fuzz(func(t *testing.T, path, typ string, mode uint32, uid, gid, size int64, mtime, link, layer, dgst, src string) {
		checkAppendFileEntry(t, types.FileEntry{Path: path, Type: typ, Mode: mode, Uid: uid, Gid: gid, Size: size, ModTime: mtime, Linkname: link, Layer: layer, Digest: dgst, Source: src})
	})
}

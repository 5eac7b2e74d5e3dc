package layerindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

// sampleIndex is a built index of every kind of entry.
func sampleIndex(t testing.TB) *Index {
	l := buildLayer(t, tarOf(t,
		dir("etc/"), file("etc/passwd", "root:x:0:0"), file("etc/group", "root:x:0:"),
		tf{name: "bin/su", typ: '0', body: "su", mode: 0o4755, uid: 70000},
		symlink("bin/sh", "/bin/busybox"), hardlink("bin/su2", "bin/su"),
		tf{name: "dev/null", typ: '3', mode: 0o666},
		dir("a/"), whiteout("a/.wh.x"), whiteout("a/.wh..wh..opq"),
	))
	l.ix.Entries[6].Devmajor, l.ix.Entries[6].Devminor = 1, 3
	return l.ix
}

func encode(t testing.TB, ix *Index) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, ix); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCodecRoundTrip(t *testing.T) {
	ix := sampleIndex(t)
	got, err := Decode(bytes.NewReader(encode(t, ix)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ix) {
		t.Fatalf("round trip differs:\n got  %+v\n want %+v", got, ix)
	}

	// A TOC's index: no offsets, no DiffID, a claimed digest.
	toc := &Index{Layer: digest.FromString("l"), Source: SourceEstargz, TarSize: -1, Entries: []Entry{
		{Path: "/", Type: TypeDir, Mode: fs.ModeDir | 0o755, HeaderOffset: -1, DataOffset: -1, ModTime: time.Unix(-5, 7).UTC()},
		{Path: "/f", Type: TypeFile, Mode: 0o600, Size: 1 << 40, HeaderOffset: -1, DataOffset: -1, HasDigest: true, SHA256: [32]byte{1, 2}, ModTime: time.Unix(0, 0).UTC()},
	}}
	got, err = Decode(bytes.NewReader(encode(t, toc)), Limits{})
	if err != nil || !reflect.DeepEqual(got, toc) {
		t.Fatalf("TOC round trip: %v\n got  %+v\n want %+v", err, got, toc)
	}
}

// reseal fixes the checksum of a hand-altered encoding, so the decoder's
// other checks are reached.
func reseal(b []byte) []byte {
	body := b[:len(b)-4]
	return binary.BigEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, crcTable))
}

func TestDecodeRefuses(t *testing.T) {
	good := encode(t, sampleIndex(t))
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 1
	v2 := append([]byte(nil), good...)
	v2[4] = 2

	withEntry := func(e Entry) []byte {
		return encode(t, &Index{Source: SourceLayer, Entries: []Entry{e}})
	}
	cases := []struct {
		name  string
		b     []byte
		lim   Limits
		want  error
		class func(error) bool
	}{
		{"empty", nil, Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"not an index", []byte("{\"json\": true}"), Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"bit flip", flipped, Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"truncated", reseal(good[:len(good)-20]), Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"trailing bytes", reseal(append(good[:len(good)-4:len(good)-4], 0, 0, 0, 0, 0)), Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"newer version", reseal(v2), Limits{}, ErrCorrupt, errdefs.IsNotImplemented},
		{"over MaxIndexBytes", good, Limits{MaxIndexBytes: int64(len(good) - 1)}, ErrLimit, errdefs.IsResourceExhausted},
		{"over MaxEntries", good, Limits{MaxEntries: 3}, ErrLimit, errdefs.IsResourceExhausted},
		{"over MaxPathLen", good, Limits{MaxPathLen: 8}, ErrCorrupt, errdefs.IsDataLoss},
		{"traversal", withEntry(Entry{Path: "/../etc", Type: TypeFile}), Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"relative path", withEntry(Entry{Path: "etc", Type: TypeFile}), Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"hardlink out", withEntry(Entry{Path: "/h", Type: TypeHardlink, Linkname: "../x"}), Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"bad type", withEntry(Entry{Path: "/x", Type: 9}), Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"mode against type", withEntry(Entry{Path: "/x", Type: TypeFile, Mode: fs.ModeDir}), Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"offset below -1", withEntry(Entry{Path: "/x", Type: TypeFile, HeaderOffset: -2}), Limits{}, ErrCorrupt, errdefs.IsDataLoss},
		{"bad source", encode(t, &Index{Source: 9}), Limits{}, ErrCorrupt, errdefs.IsDataLoss},
	}
	for _, tc := range cases {
		_, err := Decode(bytes.NewReader(tc.b), tc.lim)
		if !errors.Is(err, tc.want) || !tc.class(err) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// A count claiming 400k entries sizes nothing beyond the bytes present.
func TestDecodeHugeCountAllocatesNothing(t *testing.T) {
	var e encoder
	var buf bytes.Buffer
	e.w = &buf
	e.raw([]byte(codecMagic))
	e.raw([]byte{codecVersion, byte(SourceLayer)})
	e.str("")
	e.str("")
	e.varint(0)
	e.uvarint(400_000)
	b := binary.BigEndian.AppendUint32(buf.Bytes(), crc32.Checksum(buf.Bytes(), crcTable))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decode(bytes.NewReader(b), Limits{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v", err)
	}
	// 400k entries would be 70 MB; the input holds none.
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("%d bytes allocated for an empty index claiming 400k entries", n)
	}
}

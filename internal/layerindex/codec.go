package layerindex

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

// The encoding, version 1. Integers are varints (encoding/binary), signed
// ones zig-zag; strings are a uvarint length and the bytes.
//
//	magic    "wlix"
//	version  1 byte (1)
//	source   1 byte (Source)
//	layer    string (a digest, or empty)
//	diffid   string (a digest, or empty)
//	tarsize  varint
//	count    uvarint
//	count entries:
//	  prefix   uvarint: bytes shared with the previous entry's path
//	  suffix   string: the rest of the path
//	  type     1 byte (Type)
//	  flags    1 byte: 1 digest, 2 sparse, 4 linkname, 8 device numbers
//	  mode     uvarint (fs.FileMode)
//	  uid gid  uvarint uvarint
//	  size     uvarint
//	  mtime    varint seconds, uvarint nanoseconds
//	  linkname string             (flag 4)
//	  devmajor devminor uvarints  (flag 8)
//	  header   varint: HeaderOffset − the previous entry's HeaderOffset
//	  data     varint: DataOffset − HeaderOffset
//	  sha256   32 bytes           (flag 1)
//	crc32c   4 bytes, big-endian, of everything before it
//
// Tar order keeps a directory's entries together, so the shared prefix
// leaves about the base name to store; offsets are deltas of a few bytes.
const (
	codecMagic   = "wlix"
	codecVersion = 1
)

// The entry flags.
const (
	flagDigest = 1 << iota
	flagSparse
	flagLink
	flagDevice
)

// maxDigestLen caps the layer and DiffID strings: "sha512:" and 128 hex
// digits is the longest digest the OCI spec registers.
const maxDigestLen = 7 + 128

// minEntryLen is the fewest bytes an encoded entry takes, so that a count
// read from outside never sizes an allocation beyond the bytes present.
const minEntryLen = 13

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Encode writes ix in the encoding above.
func Encode(w io.Writer, ix *Index) error {
	bw := bufio.NewWriter(w)
	crc := crc32.New(crcTable)
	e := encoder{w: io.MultiWriter(bw, crc)}
	e.raw([]byte(codecMagic))
	e.raw([]byte{codecVersion, byte(ix.Source)})
	e.str(string(ix.Layer))
	e.str(string(ix.DiffID))
	e.varint(ix.TarSize)
	e.uvarint(uint64(len(ix.Entries)))
	prev, prevOff := "", int64(0)
	for i := range ix.Entries {
		en := &ix.Entries[i]
		n := sharedPrefix(prev, en.Path)
		e.uvarint(uint64(n))
		e.str(en.Path[n:])
		var flags byte
		if en.HasDigest {
			flags |= flagDigest
		}
		if en.Sparse {
			flags |= flagSparse
		}
		if en.Linkname != "" {
			flags |= flagLink
		}
		if en.Devmajor != 0 || en.Devminor != 0 {
			flags |= flagDevice
		}
		e.raw([]byte{byte(en.Type), flags})
		e.uvarint(uint64(en.Mode))
		e.uvarint(uint64(en.UID))
		e.uvarint(uint64(en.GID))
		e.uvarint(uint64(en.Size))
		e.varint(en.ModTime.Unix())
		e.uvarint(uint64(en.ModTime.Nanosecond()))
		if flags&flagLink != 0 {
			e.str(en.Linkname)
		}
		if flags&flagDevice != 0 {
			e.uvarint(uint64(en.Devmajor))
			e.uvarint(uint64(en.Devminor))
		}
		e.varint(en.HeaderOffset - prevOff)
		e.varint(en.DataOffset - en.HeaderOffset)
		if flags&flagDigest != 0 {
			e.raw(en.SHA256[:])
		}
		prev, prevOff = en.Path, en.HeaderOffset
	}
	if e.err != nil {
		return e.err
	}
	if _, err := bw.Write(crc.Sum(nil)); err != nil {
		return err
	}
	return bw.Flush()
}

type encoder struct {
	w   io.Writer
	err error
	tmp [binary.MaxVarintLen64]byte
}

func (e *encoder) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) uvarint(v uint64) { e.raw(binary.AppendUvarint(e.tmp[:0], v)) }
func (e *encoder) varint(v int64)   { e.raw(binary.AppendVarint(e.tmp[:0], v)) }
func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.raw([]byte(s))
}

func sharedPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// Decode reads an encoded index, capping everything it reads by lim: at
// most MaxIndexBytes are read, and the entries are held to the same limits
// as Build's. It checks the checksum before it parses, and refuses what
// Build never writes: an unclean path, an unknown type, a mode that
// contradicts the type, offsets out of order.
func Decode(r io.Reader, lim Limits) (*Index, error) {
	lim = lim.orDefault()
	// The encoding is smaller than the in-memory index it describes, so
	// MaxIndexBytes caps both.
	b, err := io.ReadAll(io.LimitReader(r, lim.MaxIndexBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > lim.MaxIndexBytes {
		return nil, limitErr("encoded index over %d bytes", lim.MaxIndexBytes)
	}
	if len(b) < len(codecMagic)+2+4 || string(b[:len(codecMagic)]) != codecMagic {
		return nil, corrupt("not a layer index")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return nil, corrupt("checksum mismatch")
	}
	d := decoder{b: body[len(codecMagic):]}
	if v := d.byte(); v != codecVersion {
		return nil, fmt.Errorf("%w: version %d, this wharf reads %d%.0w", ErrCorrupt, v, codecVersion, errdefs.ErrNotImplemented)
	}
	ix := &Index{Source: Source(d.byte())}
	ix.Layer = d.digest()
	ix.DiffID = d.digest()
	ix.TarSize = d.varint()
	count := d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	if !ix.Source.Valid() || ix.TarSize < -1 {
		return nil, corrupt("bad header")
	}
	if count > uint64(lim.MaxEntries) {
		return nil, limitErr("more than %d entries in one layer", lim.MaxEntries)
	}
	if count > 0 {
		ix.Entries = make([]Entry, 0, min(count, uint64(len(d.b)/minEntryLen)))
	}
	bud := budget{lim: lim}
	prev, prevOff := "", int64(0)
	for i := uint64(0); i < count; i++ {
		en, err := d.entry(prev, prevOff, lim.MaxPathLen)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if err := bud.add(&en); err != nil {
			return nil, err
		}
		ix.Entries = append(ix.Entries, en)
		prev, prevOff = en.Path, en.HeaderOffset
	}
	if len(d.b) != 0 {
		return nil, corrupt("trailing bytes")
	}
	return ix, nil
}

func corrupt(what string) error {
	return fmt.Errorf("%w: %s%.0w", ErrCorrupt, what, errdefs.ErrDataLoss)
}

func (d *decoder) entry(prev string, prevOff int64, maxPath int) (Entry, error) {
	var en Entry
	n := d.uvarint()
	suffix := d.str(maxPath)
	if d.err != nil {
		return en, d.err
	}
	if n > uint64(len(prev)) || n+uint64(len(suffix)) > uint64(maxPath) {
		return en, corrupt("path prefix out of range")
	}
	en.Path = prev[:n] + suffix
	en.Type = Type(d.byte())
	flags := d.byte()
	mode := d.uvarint()
	en.UID = d.nonNeg()
	en.GID = d.nonNeg()
	en.Size = d.nonNeg()
	sec, nsec := d.varint(), d.uvarint()
	if flags&flagLink != 0 {
		en.Linkname = d.str(maxPath)
	}
	if flags&flagDevice != 0 {
		en.Devmajor, en.Devminor = d.nonNeg(), d.nonNeg()
	}
	hdelta, ddelta := d.varint(), d.varint()
	if flags&flagDigest != 0 {
		copy(en.SHA256[:], d.bytes(32))
		en.HasDigest = true
	}
	if d.err != nil {
		return en, d.err
	}
	en.Sparse = flags&flagSparse != 0
	if mode > math.MaxUint32 || nsec >= 1e9 || flags >= flagDevice<<1 {
		return en, corrupt("field out of range")
	}
	en.Mode = fs.FileMode(mode)
	en.ModTime = time.Unix(sec, int64(nsec)).UTC()
	if !isClean(en.Path) || !en.Type.Valid() || !modeMatches(en.Type, en.Mode) {
		return en, corrupt(fmt.Sprintf("entry %.64q: bad path, type or mode", en.Path))
	}
	if en.Type == TypeHardlink && !isClean(en.Linkname) {
		return en, corrupt(fmt.Sprintf("hardlink %.64q: bad target", en.Path))
	}
	var ok bool
	if en.HeaderOffset, ok = addOffset(prevOff, hdelta); !ok {
		return en, corrupt("header offset out of range")
	}
	if en.DataOffset, ok = addOffset(en.HeaderOffset, ddelta); !ok {
		return en, corrupt("data offset out of range")
	}
	return en, nil
}

// addOffset is base+delta when the result is an offset (≥ 0) or the
// unknown offset (-1), without overflow.
func addOffset(base, delta int64) (int64, bool) {
	if (delta > 0 && base > math.MaxInt64-delta) || (delta < 0 && base < math.MinInt64-delta) {
		return 0, false
	}
	v := base + delta
	return v, v >= -1
}

// typeBits are the fs.FileMode type bits of each type, as Go's
// archive/tar and os.Lstat give them.
var typeBits = [...]fs.FileMode{
	TypeFile:     0,
	TypeHardlink: 0,
	TypeDir:      fs.ModeDir,
	TypeSymlink:  fs.ModeSymlink,
	TypeChar:     fs.ModeDevice | fs.ModeCharDevice,
	TypeBlock:    fs.ModeDevice,
	TypeFIFO:     fs.ModeNamedPipe,
}

// modeMatches reports whether m's type bits are those Build gives t.
func modeMatches(t Type, m fs.FileMode) bool {
	return t.Valid() && m&fs.ModeType == typeBits[t]
}

// decoder reads from b; the first error sticks and every later read
// returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() { d.err, d.b = corrupt("truncated or malformed field"), nil }

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.fail()
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) nonNeg() int64 {
	v := d.uvarint()
	if v > math.MaxInt64 {
		d.fail()
		return 0
	}
	return int64(v)
}

// str reads a string of at most max bytes.
func (d *decoder) str(max int) string {
	n := d.uvarint()
	if n > uint64(max) {
		d.fail()
		return ""
	}
	return string(d.bytes(int(n)))
}

func (d *decoder) digest() digest.Digest {
	s := d.str(maxDigestLen)
	if d.err != nil || s == "" {
		return ""
	}
	dg, err := digest.Parse(s)
	if err != nil {
		d.fail()
		return ""
	}
	return dg
}

package testregistry

import (
	"fmt"
	"strconv"
)

// SparseTarEntry is one tar entry (PAX header and file, each padded to
// 512-byte blocks; no end-of-archive blocks) for a GNU sparse file in PAX
// format 0.1: the GNU.sparse.* records declare a file of realSize bytes
// whose only data is data at its end, and archive/tar reads it back as
// realSize bytes, zeros first. It is hand-written because archive/tar's
// writer refuses GNU.sparse.* records. Append it to a tar.Writer's
// output after Flush.
func SparseTarEntry(name string, realSize int64, data []byte) []byte {
	off := realSize - int64(len(data))
	recs := [][2]string{
		{"GNU.sparse.map", fmt.Sprintf("%d,%d", off, len(data))},
		{"GNU.sparse.name", name},
		{"GNU.sparse.numblocks", "1"},
		{"GNU.sparse.size", strconv.FormatInt(realSize, 10)},
	}
	var pax []byte
	for _, kv := range recs {
		pax = append(pax, paxRecord(kv[0], kv[1])...)
	}
	out := ustarHeader("PaxHeaders/"+name, 'x', int64(len(pax)))
	out = append(out, pad512(pax)...)
	out = append(out, ustarHeader("GNUSparseFile.0/"+name, '0', int64(len(data)))...)
	return append(out, pad512(data)...)
}

// paxRecord is "<len> key=value\n", len counting itself.
func paxRecord(k, v string) []byte {
	body := " " + k + "=" + v + "\n"
	n := len(body) + 1
	for len(strconv.Itoa(n))+len(body) != n {
		n++
	}
	return []byte(strconv.Itoa(n) + body)
}

func pad512(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}

// ustarHeader is a 512-byte ustar header block.
func ustarHeader(name string, typ byte, size int64) []byte {
	h := make([]byte, 512)
	copy(h[0:100], name)
	copy(h[100:108], "0000644\x00")
	copy(h[108:116], "0000000\x00")
	copy(h[116:124], "0000000\x00")
	copy(h[124:136], fmt.Sprintf("%011o\x00", size))
	copy(h[136:148], fmt.Sprintf("%011o\x00", 1700000000))
	h[156] = typ
	copy(h[257:263], "ustar\x00")
	copy(h[263:265], "00")
	copy(h[148:156], "        ")
	sum := 0
	for _, c := range h {
		sum += int(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return h
}

package layertoc

import (
	"math"
	"slices"

	digest "github.com/opencontainers/go-digest"
)

// folder turns a TOC's raw entries into Entries, folding each "chunk"
// entry into the file before it. Both formats list a file as a "reg"
// entry (its first chunk) followed by "chunk" entries; they differ in
// where a chunk's compressed stream ends:
//   - eStargz: at the next distinct offset of any chunk in the blob, or
//     at the TOC (innerOffset places a chunk inside a shared gzip member);
//   - zstd:chunked: at the next chunk's offset, the last at the file's
//     endOffset (each chunk is its own zstd frame).
type folder struct {
	src     Source
	lim     Limits
	entries []Entry
	last    int     // index of the last file in entries, -1 if none
	ends    []int64 // zstd:chunked: each file's endOffset, by entry index
	offsets []int64 // eStargz: every chunk's offset
}

func newFolder(src Source, lim Limits) *folder {
	return &folder{src: src, lim: lim, last: -1}
}

func (f *folder) add(i int, e *rawEntry) error {
	if e.Type == "chunk" {
		return f.addChunk(e)
	}
	f.last = -1
	ent, err := newEntry(e, f.lim)
	if err != nil {
		return err
	}
	f.entries = append(f.entries, ent)
	if f.src == SourceZstdChunked {
		f.ends = append(f.ends, e.EndOffset)
	}
	if ent.Type != TypeFile || ent.Size == 0 {
		return nil
	}
	f.last = len(f.entries) - 1
	size := e.ChunkSize
	if size == 0 { // one chunk: the whole file
		size = ent.Size
	}
	if e.ChunkOffset != 0 {
		return invalid("file %q: first chunk at %d, want 0", e.Name, e.ChunkOffset)
	}
	return f.appendChunk(e, size)
}

func (f *folder) addChunk(e *rawEntry) error {
	if f.last < 0 {
		return invalid("chunk entry %q follows no regular file", e.Name)
	}
	file := &f.entries[f.last]
	if e.Name != "" {
		if p, err := cleanPath(e.Name, f.lim); err != nil || p != file.Path {
			return invalid("chunk entry %q follows file %q", e.Name, file.Path)
		}
	}
	size := e.ChunkSize
	if size == 0 { // eStargz: the last chunk runs to the end of the file
		size = file.Size - e.ChunkOffset
	}
	return f.appendChunk(e, size)
}

func (f *folder) appendChunk(e *rawEntry, size int64) error {
	file := &f.entries[f.last]
	if len(file.Chunks) >= f.lim.ChunksPerFile {
		return tooLarge("file %q has more than %d chunks", file.Path, f.lim.ChunksPerFile)
	}
	if e.Offset < 0 || e.InnerOffset < 0 || size <= 0 || e.ChunkOffset < 0 || e.InnerOffset > math.MaxInt64-size {
		return invalid("file %q: chunk at offset %d (inner %d) of %d bytes at %d", file.Path, e.Offset, e.InnerOffset, size, e.ChunkOffset)
	}
	c := Chunk{Offset: e.Offset, InnerOffset: e.InnerOffset, FileOffset: e.ChunkOffset, Size: size}
	if e.ChunkDigest != "" {
		d, err := digest.Parse(e.ChunkDigest)
		if err != nil {
			return invalid("file %q: chunk digest %.80q: %v", file.Path, e.ChunkDigest, err)
		}
		c.Digest = d
	}
	file.Chunks = append(file.Chunks, c)
	if f.src == SourceEStargz {
		f.offsets = append(f.offsets, e.Offset)
	}
	return nil
}

// finish places each chunk's compressed stream, which must end by
// dataEnd (where the TOC begins), and checks that each file's chunks
// tile it in order and carry a digest.
func (f *folder) finish(dataEnd int64) ([]Entry, error) {
	slices.Sort(f.offsets)
	f.offsets = slices.Compact(f.offsets)
	for i := range f.entries {
		file := &f.entries[i]
		if len(file.Chunks) == 0 {
			continue
		}
		for j := range file.Chunks {
			c := &file.Chunks[j]
			end := dataEnd
			switch f.src {
			case SourceEStargz:
				if k, _ := slices.BinarySearch(f.offsets, c.Offset+1); k < len(f.offsets) {
					end = f.offsets[k]
				}
			case SourceZstdChunked:
				end = f.ends[i]
				if j+1 < len(file.Chunks) {
					end = file.Chunks[j+1].Offset
				}
			}
			if c.Offset >= dataEnd {
				return nil, invalid("file %q: chunk %d starts at byte %d, past the layer's data, which ends at %d where the TOC begins", file.Path, j, c.Offset, dataEnd)
			}
			if end > dataEnd || end <= c.Offset {
				return nil, invalid("file %q: chunk %d at byte %d ends at %d, outside the layer's data (0-%d)", file.Path, j, c.Offset, end, dataEnd)
			}
			c.CompressedSize = end - c.Offset
			if c.Digest == "" {
				if len(file.Chunks) != 1 || file.Digest == "" {
					return nil, invalid("file %q: chunk %d has no digest", file.Path, j)
				}
				c.Digest = file.Digest
			}
		}
		if err := checkTiling(file); err != nil {
			return nil, err
		}
	}
	return f.entries, nil
}

// checkTiling: the chunks cover the file from 0 to its size, in order,
// and each lies after the one before in the blob, so that one pass over
// the file's ranges reads them all.
func checkTiling(file *Entry) error {
	var at int64
	for j, c := range file.Chunks {
		if c.FileOffset != at {
			return invalid("file %q: chunk %d starts at %d, want %d", file.Path, j, c.FileOffset, at)
		}
		if c.Size > file.Size-at {
			return invalid("file %q: chunks run past its size %d", file.Path, file.Size)
		}
		at += c.Size
		if j == 0 {
			continue
		}
		p := file.Chunks[j-1]
		sameStream := c.Offset == p.Offset && c.InnerOffset >= p.InnerOffset+p.Size
		if !sameStream && c.Offset < p.Offset+p.CompressedSize {
			return invalid("file %q: chunk %d at blob offset %d overlaps or precedes chunk %d", file.Path, j, c.Offset, j-1)
		}
	}
	if at != file.Size {
		return invalid("file %q: chunks cover %d of its %d bytes", file.Path, at, file.Size)
	}
	return nil
}

// Package ctxio copies a stream and waits under a context: the one copy
// loop the store, the archives and the layout writer use so that a client
// that leaves stops a copy of gigabytes between two reads, and the one
// wait the registry's resumes back off with.
package ctxio

import (
	"context"
	"io"
	"time"
)

// bufSize is the copy's buffer: 256 KiB, large enough that a read of a
// fast local file or socket is not the bottleneck, small enough per
// concurrent stream (a pull writes up to 3 layers at once).
const bufSize = 256 << 10

// Copy copies like io.Copy and stops between chunks once ctx is done,
// returning ctx's error and the bytes written so far.
func Copy(ctx context.Context, dst io.Writer, src io.Reader) (int64, error) {
	buf := make([]byte, bufSize)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		m, rerr := src.Read(buf)
		if m > 0 {
			w, werr := dst.Write(buf[:m])
			n += int64(w)
			if werr != nil {
				return n, werr
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// Sleep waits d or until ctx ends, returning ctx's error then.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

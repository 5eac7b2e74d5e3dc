package ctxio

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCopyCopiesAll(t *testing.T) {
	src := strings.Repeat("x", 3*bufSize+7)
	var dst bytes.Buffer
	n, err := Copy(context.Background(), &dst, strings.NewReader(src))
	if err != nil || n != int64(len(src)) || dst.String() != src {
		t.Fatalf("Copy = %d, %v; %d bytes arrived", n, err, dst.Len())
	}
}

// cancelAfterRead cancels its context once it has been read from.
type cancelAfterRead struct {
	r      *strings.Reader
	cancel context.CancelFunc
}

func (c *cancelAfterRead) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.cancel()
	return n, err
}

func TestCopyStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	src := &cancelAfterRead{r: strings.NewReader(strings.Repeat("x", 4*bufSize)), cancel: cancel}
	var dst bytes.Buffer
	n, err := Copy(ctx, &dst, src)
	if !errors.Is(err, context.Canceled) || n != bufSize {
		t.Fatalf("Copy = %d, %v; want one chunk (%d) and context.Canceled", n, err, bufSize)
	}
}

package ahead

import (
	"context"
	"io"
)

// Held passes items to out once its gate is open. Before that it keeps
// them, up to max by size's count, then waits for the gate: a read on a
// guess holds a bounded amount per request while the registry answers.
// Flush (at the read's end, when it succeeded) waits and passes the rest.
type Held[T any] struct {
	ctx  context.Context
	g    *Gate
	out  func(T) error
	size func(T) int
	max  int
	n    int
	buf  []T
	open bool
}

// NewHeld holds items for out behind g, at most max by size's count.
func NewHeld[T any](ctx context.Context, g *Gate, max int, size func(T) int, out func(T) error) *Held[T] {
	return &Held[T]{ctx: ctx, g: g, out: out, size: size, max: max}
}

// Put passes v, or keeps it while the gate is closed and there is room.
func (h *Held[T]) Put(v T) error {
	if !h.open {
		if !h.g.IsOpen() && h.n < h.max {
			h.buf = append(h.buf, v)
			h.n += h.size(v)
			return nil
		}
		if err := h.Flush(); err != nil {
			return err
		}
	}
	return h.out(v)
}

// Flush waits for the gate and passes what is kept.
func (h *Held[T]) Flush() error {
	if h.open {
		return nil
	}
	if err := h.g.Wait(h.ctx); err != nil {
		return err
	}
	h.open = true
	h.g.Pass()
	for _, v := range h.buf {
		if err := h.out(v); err != nil {
			return err
		}
	}
	h.buf = nil
	return nil
}

// Writer is Held for a byte stream whose destination is opened only once
// the gate is open (an HTTP answer's status and headers are sent then).
type Writer struct {
	ctx  context.Context
	g    *Gate
	dest func() (io.Writer, error)
	w    io.Writer
	buf  []byte
	max  int
}

// NewWriter holds up to max bytes behind g, then waits; dest opens the
// real destination once g is open.
func NewWriter(ctx context.Context, g *Gate, max int, dest func() (io.Writer, error)) *Writer {
	return &Writer{ctx: ctx, g: g, dest: dest, max: max}
}

func (h *Writer) Write(p []byte) (int, error) {
	if h.w == nil {
		if !h.g.IsOpen() && len(h.buf)+len(p) <= h.max {
			h.buf = append(h.buf, p...)
			return len(p), nil
		}
		if err := h.Flush(); err != nil {
			return 0, err
		}
	}
	return h.w.Write(p)
}

// Flush waits for the gate, opens the destination and writes what is
// kept.
func (h *Writer) Flush() error {
	if h.w != nil {
		return nil
	}
	if err := h.g.Wait(h.ctx); err != nil {
		return err
	}
	h.g.Pass()
	w, err := h.dest()
	if err != nil {
		return err
	}
	h.w = w
	if len(h.buf) > 0 {
		_, err = w.Write(h.buf)
		h.buf = nil
	}
	return err
}

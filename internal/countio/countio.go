// Package countio counts the bytes read through a reader as they are
// read: metrics that a scrape sees grow during a transfer, and the bytes a
// package list fetched from a registry.
package countio

import "io"

// ReadCloser reports each read's byte count to Add as it happens.
type ReadCloser struct {
	io.ReadCloser
	Add func(int64)
}

func (r *ReadCloser) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		r.Add(int64(n))
	}
	return n, err
}

package main

import (
	"io"

	"github.com/moby/moby/api/types/jsonstream"

	"github.com/wharfproject/wharf/client"
)

// display renders a JSON message stream to out: per-layer lines rewritten in
// place on a terminal, plain lines otherwise. It returns the in-stream error.
func (c *cli) display(in io.Reader, out io.Writer, aux func(jsonstream.Message)) error {
	fd, _ := fdOf(out)
	return client.DisplayStream(in, out, fd, isTerminal(out), aux)
}

// progressOut is where a command's progress stream goes: stdout, or nowhere
// with -q (pull, push and copy then print only their result).
func (c *cli) progressOut(quiet bool) io.Writer {
	if quiet {
		return io.Discard
	}
	return c.out
}

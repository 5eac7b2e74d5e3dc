package client

import (
	"io"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client/pkg/jsonmessage"
)

// DisplayStream renders a JSON message stream (pull, push, load, import) to
// out the way the docker CLI does: on a terminal, one line per layer rewritten
// in place; otherwise plain lines. It returns the first in-stream error
// (errorDetail). aux, if set, receives messages with an aux field.
func DisplayStream(in io.Reader, out io.Writer, terminalFd uintptr, isTerminal bool, aux func(jsonstream.Message)) error {
	return jsonmessage.DisplayJSONMessagesStream(in, out, terminalFd, isTerminal, aux)
}

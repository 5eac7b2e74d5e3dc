package server

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/moby/moby/api/types/jsonstream"
)

// streamWriter is the types.ProgressWriter of the streaming endpoints (pull,
// push, load, import). The 200 status line goes out with the first message
// only: an error returned before any message is still a normal error
// response; after it, errors go in-stream (writeErrorLine). Lines end in
// "\r\n" like dockerd's streamformatter, and every line is flushed at once so
// that clients see progress live. Safe for concurrent use: pulls report
// layers from several goroutines.
type streamWriter struct {
	mu          sync.Mutex
	w           http.ResponseWriter
	rc          *http.ResponseController
	contentType string
	eol         string // after each line: "\r\n" as dockerd's progress, "\n" for NDJSON
	started     bool
	err         error // first write error: the client went away
}

func newStreamWriter(w http.ResponseWriter, contentType string) *streamWriter {
	return &streamWriter{w: w, rc: http.NewResponseController(w), contentType: contentType, eol: "\r\n"}
}

// newNDJSONWriter streams newline-delimited JSON (wharf's own streams),
// each line flushed.
func newNDJSONWriter(w http.ResponseWriter) *streamWriter {
	return &streamWriter{w: w, rc: http.NewResponseController(w), contentType: ndjson, eol: "\n"}
}

// wireMessage adds the deprecated "error" string dockerd still sends beside
// errorDetail (the docker CLI before v1.48 reads only that one).
type wireMessage struct {
	jsonstream.Message
	ErrorMessage string `json:"error,omitempty"`
}

// WriteMessage implements types.ProgressWriter.
func (s *streamWriter) WriteMessage(m jsonstream.Message) error {
	wm := wireMessage{Message: m}
	if m.Error != nil {
		wm.ErrorMessage = m.Error.Message
	}
	b, err := json.Marshal(wm)
	if err != nil {
		return err
	}
	return s.writeLine(b)
}

func (s *streamWriter) writeLine(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.startLocked()
	if _, err := s.w.Write(append(b, s.eol...)); err != nil {
		s.err = err
		return err
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
		return err
	}
	return nil
}

func (s *streamWriter) startLocked() {
	if s.started {
		return
	}
	s.started = true
	s.w.Header().Set("Content-Type", s.contentType)
	s.w.WriteHeader(http.StatusOK)
}

// Started reports whether the status line has gone out.
func (s *streamWriter) Started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// finish ends an operation: an error before the stream started becomes the
// handler's error (a normal error response); after it, an in-stream
// errorDetail line. A successful operation that wrote nothing still answers
// 200 with an empty stream.
func (s *streamWriter) finish(opErr error) error {
	if opErr == nil {
		s.mu.Lock()
		s.startLocked()
		s.mu.Unlock()
		return nil
	}
	if !s.Started() {
		return opErr
	}
	msg := opErr.Error()
	_ = s.WriteMessage(jsonstream.Message{Error: &jsonstream.Error{Message: msg}})
	return nil
}

// errorMessage is the in-stream form of err.
func errorMessage(err error) jsonstream.Message {
	return jsonstream.Message{Error: &jsonstream.Error{Message: err.Error()}}
}

package hostile

import (
	"bytes"
	"net"
	"net/http"
	"time"
)

// endlessCap stops an "endless" body after 2 GiB so a client that never
// stops reading cannot keep a test running forever.
const endlessCap = 2 << 30

// Endless answers status with prefix and then spaces until the client goes
// away (or endlessCap). Without a Content-Length the body is chunked.
func Endless(w http.ResponseWriter, r *http.Request, status int, contentType string, prefix []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := w.Write(prefix); err != nil {
		return
	}
	chunk := bytes.Repeat([]byte{' '}, 64<<10)
	for n := 0; n < endlessCap; n += len(chunk) {
		if r.Context().Err() != nil {
			return
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// Padded is body followed by spaces up to size bytes (still valid JSON).
func Padded(body []byte, size int) []byte {
	if len(body) >= size {
		return body
	}
	return append(append([]byte(nil), body...), bytes.Repeat([]byte{' '}, size-len(body))...)
}

// Trickle sends the headers and then one byte of body every interval until
// the body is sent or the client goes away.
func Trickle(w http.ResponseWriter, r *http.Request, contentType string, body []byte, interval time.Duration) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for i := range body {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		if _, err := w.Write(body[i : i+1]); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

// Reset ends the connection with a TCP RST (SO_LINGER 0) without answering.
func Reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("hostile: ResponseWriter is not a Hijacker") // test servers always are
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// Hang holds the request open without answering until the client goes away.
func Hang(r *http.Request) { <-r.Context().Done() }

// Redirect answers 307 to location.
func Redirect(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.WriteHeader(http.StatusTemporaryRedirect)
}

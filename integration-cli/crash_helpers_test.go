package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"gopkg.in/check.v1"
)

// crashStreamTimeout bounds one request that the test means to interrupt.
const crashStreamTimeout = 2 * time.Minute

// streamUntil sends a request to d and reads the JSON-lines answer; after
// each message it calls stop, and when stop says so it SIGKILLs wharfd at
// once (the stream is left unread). It returns the messages seen and whether
// the kill happened (false: the request finished first). killed, when not
// nil, is closed by a body reader that killed wharfd itself.
func streamUntil(c *check.C, d *Daemon, method, path string, body io.Reader, hdr http.Header, killed chan struct{}, stop func(n int, m map[string]any) bool) (StreamLines, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), crashStreamTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://wharfd"+path, body)
	c.Assert(err, check.IsNil)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	hc := d.HTTPClient()
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		// The body reader may have killed wharfd before an answer came.
		if killed != nil {
			select {
			case <-killed:
				return nil, true
			case <-time.After(daemonStopTimeout):
			}
		}
		c.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lines StreamLines
	for sc.Scan() {
		if killed != nil && isClosed(killed) {
			return lines, true
		}
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		lines = append(lines, m)
		if stop(len(lines), m) {
			d.Kill()
			return lines, true
		}
	}
	if killed != nil {
		// A read error may be the kill; wait for the reader to finish it.
		if sc.Err() != nil {
			select {
			case <-killed:
			case <-time.After(daemonStopTimeout):
			}
		}
		return lines, isClosed(killed)
	}
	return lines, false
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// killingReader feeds r to wharfd and SIGKILLs it once after bytes have been
// taken from it: the daemon has read at least that much minus the socket
// buffers.
type killingReader struct {
	r     io.Reader
	after int64
	n     int64
	kill  func()
	done  bool
	// killed is closed once kill has returned.
	killed chan struct{}
}

func (k *killingReader) Read(p []byte) (int, error) {
	if len(p) > 32<<10 {
		p = p[:32<<10] // small steps: the offset is respected within 32 KiB
	}
	if k.done {
		return 0, io.ErrClosedPipe
	}
	if k.n >= k.after {
		k.done = true
		k.kill()
		close(k.killed)
		return 0, io.ErrClosedPipe
	}
	n, err := k.r.Read(p)
	k.n += int64(n)
	return n, err
}

// rawRequest writes one HTTP request to wharfd's socket and returns the
// connection unread: the caller decides when to kill.
func rawRequest(c *check.C, d *Daemon, method, path string) net.Conn {
	conn, err := net.Dial("unix", d.Sock)
	c.Assert(err, check.IsNil)
	_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: wharfd\r\nContent-Length: 0\r\n\r\n", method, path)
	c.Assert(err, check.IsNil)
	return conn
}

// readStatusLine waits for the first line of the answer on conn.
func readStatusLine(conn net.Conn) string {
	_ = conn.SetReadDeadline(time.Now().Add(crashStreamTimeout))
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line)
}

// afterCrash restarts d on its data-root and checks what a crash may leave:
// an empty ingest area, a store the full check finds clean, no orphan blob
// (orphanReport), every listed image inspectable. It returns the image IDs
// listed.
func afterCrash(c *check.C, d *Daemon, what string) []string {
	d.Start(c, d.Args...)
	ents, err := os.ReadDir(filepath.Join(d.Root, "ingest"))
	c.Assert(err, check.IsNil)
	c.Assert(ents, check.HasLen, 0, check.Commentf("%s: ingest not emptied at start-up", what))
	rep, code := systemCheck(c, d)
	c.Assert(code, check.Equals, 0, check.Commentf("%s: system check after the crash:\n%s\n--- log ---\n%s", what, rep, d.Log()))
	// No blob outlives the crash unless an image uses it: the blobs a
	// killed pull, load or import had stored are reclaimed at start-up, and
	// the check (GET /wharf/system/check) counts no unreferenced blob.
	c.Assert(orphanReport(c, d, gcTimeout), check.Equals, "", check.Commentf("%s: orphan blobs after the restart", what))
	var list []struct{ ID string }
	d.Get(c, "/v1.50/images/json?all=1").JSON(c, &list)
	var ids []string
	for _, im := range list {
		r := d.Get(c, "/v1.50/images/"+im.ID+"/json")
		c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("%s: listed image %s does not inspect: %s", what, im.ID, r))
		ids = append(ids, im.ID)
	}
	return ids
}

// ingestWatch SIGKILLs wharfd as soon as a file in its ingest/ area holds
// at least n bytes: the kill lands in the middle of a blob write. It polls
// the directory without sleeping (the event is the file's size).
type ingestWatch struct {
	killed chan struct{} // closed after the kill
	quit   chan struct{}
	done   chan struct{}
}

func watchIngest(d *Daemon, n int64) *ingestWatch {
	w := &ingestWatch{killed: make(chan struct{}), quit: make(chan struct{}), done: make(chan struct{})}
	dir := filepath.Join(d.Root, "ingest")
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.quit:
				return
			default:
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if fi, err := e.Info(); err == nil && fi.Size() >= n {
					d.Kill()
					close(w.killed)
					return
				}
			}
			runtime.Gosched()
		}
	}()
	return w
}

// stop ends the watch and reports whether it killed wharfd.
func (w *ingestWatch) stop() bool {
	close(w.quit)
	<-w.done
	return isClosed(w.killed)
}

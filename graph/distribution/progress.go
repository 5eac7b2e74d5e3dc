package distribution

import (
	"io"
	"sync"
	"time"

	"github.com/moby/moby/api/types/jsonstream"

	"github.com/wharfproject/wharf/api/types"
)

// Progress updates are throttled as dockerd's progressreader does: a
// "Downloading"/"Pushing" line only after at least 512 KiB more were moved
// AND at least 100 ms passed since the previous line (plus the final one).
// Without it a 256 MiB layer read in 32 KiB chunks would be 8192 lines.
const (
	progressEveryBytes = 512 << 10
	progressEvery      = 100 * time.Millisecond
)

// progressOutput serialises the messages of concurrent layer transfers onto
// one ProgressWriter; the first write error is kept and returned by Err so a
// vanished client ends the operation.
type progressOutput struct {
	mu  sync.Mutex
	out types.ProgressWriter
	err error
}

func newProgressOutput(out types.ProgressWriter) *progressOutput {
	if out == nil {
		out = types.DiscardProgress
	}
	return &progressOutput{out: out}
}

func (p *progressOutput) write(m jsonstream.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	p.err = p.out.WriteMessage(m)
	return p.err
}

// status writes a message without an id or progressDetail ("Pulling from"
// and "Digest:" lines carry none in dockerd's stream).
func (p *progressOutput) status(id, status string) error {
	return p.write(jsonstream.Message{ID: id, Status: status})
}

// layer writes a per-layer status with an empty progressDetail, as dockerd
// does for "Pulling fs layer", "Waiting", "Pull complete" and the like.
func (p *progressOutput) layer(id, status string) error {
	return p.write(jsonstream.Message{ID: id, Status: status, Progress: &jsonstream.Progress{}})
}

// bytes writes a transfer update.
func (p *progressOutput) bytes(id, status string, current, total int64) error {
	return p.write(jsonstream.Message{ID: id, Status: status, Progress: &jsonstream.Progress{Current: current, Total: total}})
}

// Err is the first error the writer returned.
func (p *progressOutput) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// progressReader reports the bytes read through it as throttled updates.
type progressReader struct {
	r      io.Reader
	out    *progressOutput
	id     string
	status string
	total  int64
	now    func() time.Time // injectable clock for tests
	onEOF  func()           // called once when the source is exhausted

	current    int64
	lastBytes  int64
	lastUpdate time.Time
	eof        bool
}

func newProgressReader(r io.Reader, out *progressOutput, id, status string, total int64) *progressReader {
	return &progressReader{r: r, out: out, id: id, status: status, total: total, now: time.Now}
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.current += int64(n)
	done := err == io.EOF || (p.total > 0 && p.current == p.total)
	if n > 0 {
		now := p.now()
		if done || (p.current-p.lastBytes >= progressEveryBytes && now.Sub(p.lastUpdate) >= progressEvery) {
			p.lastBytes, p.lastUpdate = p.current, now
			if werr := p.out.bytes(p.id, p.status, p.current, p.total); werr != nil {
				return n, werr
			}
		}
	}
	if done && !p.eof {
		p.eof = true
		if p.onEOF != nil {
			p.onEOF()
		}
	}
	return n, err
}

// shortID is the 12-hex-digit id dockerd shows for a layer.
func shortID(d interface{ Encoded() string }) string {
	e := d.Encoded()
	if len(e) > 12 {
		return e[:12]
	}
	return e
}

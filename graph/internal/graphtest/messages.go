package graphtest

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/moby/moby/api/types/jsonstream"
)

// Messages collects a progress stream: a types.ProgressWriter safe for
// concurrent writers. Its zero value is ready to use.
type Messages struct {
	mu   sync.Mutex
	msgs []jsonstream.Message
}

// WriteMessage records m.
func (m *Messages) WriteMessage(msg jsonstream.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs = append(m.msgs, msg)
	return nil
}

// All is every message written so far, in order.
func (m *Messages) All() []jsonstream.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]jsonstream.Message(nil), m.msgs...)
}

// Len is how many messages were written.
func (m *Messages) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.msgs)
}

// At is message i; a negative i counts from the end (-1 is the last). It
// panics when there is no such message, as an index out of range does.
func (m *Messages) At(i int) jsonstream.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < 0 {
		i += len(m.msgs)
	}
	return m.msgs[i]
}

// Last is the newest message (the zero message when there is none).
func (m *Messages) Last() jsonstream.Message {
	if m.Len() == 0 {
		return jsonstream.Message{}
	}
	return m.At(-1)
}

// Has reports whether a message with id has status.
func (m *Messages) Has(id, status string) bool {
	for _, msg := range m.All() {
		if msg.ID == id && msg.Status == status {
			return true
		}
	}
	return false
}

// Statuses lists the statuses of id's messages in order, the "Downloading"
// progress messages left out.
func (m *Messages) Statuses(id string) []string {
	var out []string
	for _, msg := range m.All() {
		if msg.ID == id && msg.Status != "Downloading" {
			out = append(out, msg.Status)
		}
	}
	return out
}

// String is the stream as JSON lines.
func (m *Messages) String() string {
	var b strings.Builder
	for _, msg := range m.All() {
		j, _ := json.Marshal(msg)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

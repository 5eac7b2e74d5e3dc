package types

import "github.com/moby/moby/api/types/events"

// EventMessage is one /events record. Besides the current fields it carries the
// legacy `status`, `id` and `from` fields that docker CLIs before v25 need
// (dockerd back-fills them for image and container events).
type EventMessage struct {
	Status string `json:"status,omitempty"`
	ID     string `json:"id,omitempty"`
	From   string `json:"from,omitempty"`

	events.Message
}

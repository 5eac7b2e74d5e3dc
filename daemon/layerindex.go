package daemon

import (
	"encoding/json"
	"fmt"
	"strconv"

	units "github.com/docker/go-units"
)

// defaultLayerIndexBudget is graph/contents' default, as the flag's help
// shows it: 1 GiB holds the indexes of 50–300 GiB of layers.
const defaultLayerIndexBudget = "1GiB"

// byteSize is a size in bytes, written in daemon.json as a number or a
// string with a unit ("512MiB", "2GB"), and on the command line as the
// string.
type byteSize int64

func (b *byteSize) UnmarshalJSON(p []byte) error {
	var n int64
	if err := json.Unmarshal(p, &n); err == nil {
		*b = byteSize(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(p, &s); err != nil {
		return fmt.Errorf("want bytes or a size string such as \"2GiB\"")
	}
	return b.Set(s)
}

func (b *byteSize) Set(s string) error {
	n, err := units.RAMInBytes(s)
	if err != nil {
		return fmt.Errorf("want bytes or a size such as 2GiB: %w", err)
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) String() string {
	if b == nil || *b == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *byteSize) Type() string { return "bytes" }

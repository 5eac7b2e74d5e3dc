package content

import (
	"errors"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
)

// LimitReader returns a reader that fails (instead of truncating) past max bytes.
func LimitReader(r io.Reader, max int64) io.Reader { return &cappedReader{r: r, left: max, max: max} }

type cappedReader struct {
	r         io.Reader
	left, max int64
}

// ErrTooLarge is what a LimitReader returns past its cap.
var ErrTooLarge = errors.New("input too large")

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: more than %d bytes%.0w", ErrTooLarge, c.max, errdefs.ErrInvalidArgument)
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

package countio

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadCloserCountsEachRead(t *testing.T) {
	var total, calls int64
	r := &ReadCloser{ReadCloser: io.NopCloser(strings.NewReader("0123456789")), Add: func(n int64) { total += n; calls++ }}
	buf := make([]byte, 4)
	for {
		_, err := r.Read(buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// 4 + 4 + 2, and no call for the read that returned EOF alone.
	if total != 10 || calls != 3 {
		t.Fatalf("counted %d bytes in %d calls; want 10 in 3", total, calls)
	}
}

package transport

import (
	"fmt"
	"io"
	"net/http"

	"github.com/opencontainers/go-digest"
)

// uploadCheck verifies the registry's receipt of a blob: the PUT that
// completes an upload (…/blobs/uploads/…?digest=D) and a cross-repository
// mount (POST …/blobs/uploads/?mount=D) answered 201 must name the same
// digest in Docker-Content-Digest when they name one. A registry that
// stores something else and says so must not be reported as "Pushed".
type uploadCheck struct{ next http.RoundTripper }

func (u uploadCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := u.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		return resp, err
	}
	q := req.URL.Query()
	want := q.Get("digest")
	if req.Method == http.MethodPost {
		want = q.Get("mount")
	} else if req.Method != http.MethodPut {
		return resp, nil
	}
	got := resp.Header.Get("Docker-Content-Digest")
	if want == "" || got == "" {
		return resp, nil
	}
	w, werr := digest.Parse(want)
	g, gerr := digest.Parse(got)
	if werr == nil && gerr == nil && w == g {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	return nil, fmt.Errorf("blob upload: %w", DigestMismatch(req.URL.Host, "uploaded blob", digestOrRaw(want), digestOrRaw(got)))
}

type rawString string

func (r rawString) String() string { return string(r) }

func digestOrRaw(s string) fmt.Stringer {
	if d, err := digest.Parse(s); err == nil {
		return d
	}
	return rawString(s)
}

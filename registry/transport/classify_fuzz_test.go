package transport

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

// FuzzErrorBody classifies an error answer with any status and body, as
// every call that meets the wire does. The class follows the status and
// the registry's codes as classify.go documents: a 404 or a *_UNKNOWN code
// is NotFound, then 401 and 403 are ErrUnauthorized (Unauthenticated), 429
// and 5xx Unavailable, 400 InvalidArgument; any other status keeps the
// registry's answer (status included) under the host's name.
func FuzzErrorBody(f *testing.F) {
	for _, s := range []struct {
		status int
		body   string
	}{
		{404, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`},
		{401, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":[{"Type":"repository","Name":"a","Action":"pull"}]}]}`},
		{403, `{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`},
		{401, `{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}`},
		{429, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`},
		{503, `<html>Service Unavailable</html>`},
		{400, `{"errors":[{"code":"DIGEST_INVALID","message":"digest invalid"}]}`},
		{409, `{"errors":[]}`},
		{418, ``},
		{500, `{"errors":[{"code":5}]}`},
	} {
		f.Add(s.status, []byte(s.body))
	}
	const host = "registry.test:5000"
	u, err := url.Parse("http://" + host + "/v2/a/manifests/1")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 400 || status > 599 {
			return // not an error answer
		}
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Request: &http.Request{Method: http.MethodGet, URL: u}}
		err := StatusError(http.MethodGet, resp, body, host)
		if err == nil {
			t.Fatal("an error answer classified as no error")
		}
		// Classified once: passing through classify again changes nothing.
		if again := classify(err, "elsewhere.test"); again != err {
			t.Fatalf("classified twice: %v, then %v", err, again)
		}
		// The codes, read as responseError reads them.
		var doc struct {
			Errors []struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Detail  any    `json:"detail,omitempty"`
			} `json:"errors"`
		}
		unknown := false
		if json.Unmarshal(body, &doc) == nil {
			for _, e := range doc.Errors {
				switch e.Code {
				case CodeNameUnknown, CodeManifestUnknown, CodeBlobUnknown:
					unknown = true
				}
			}
		}
		switch {
		case status == http.StatusNotFound || unknown:
			if !errdefs.IsNotFound(err) {
				t.Fatalf("%d (unknown code %v): %v, want NotFound", status, unknown, err)
			}
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			if !errors.Is(err, ErrUnauthorized) || !errdefs.IsUnauthorized(err) || !strings.Contains(err.Error(), host) {
				t.Fatalf("%d: %v, want ErrUnauthorized naming %s", status, err, host)
			}
			if status == http.StatusForbidden && !errors.Is(err, ErrDenied) {
				t.Fatalf("403: %v, want ErrDenied", err)
			}
		case status == http.StatusTooManyRequests || status >= 500:
			if !errdefs.IsUnavailable(err) || !strings.Contains(err.Error(), host) {
				t.Fatalf("%d: %v, want Unavailable naming %s", status, err, host)
			}
		case status == http.StatusBadRequest:
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("400: %v, want InvalidArgument", err)
			}
		default:
			var er *ErrorResponse
			if !errors.As(err, &er) || er.StatusCode != status || !strings.Contains(err.Error(), host) {
				t.Fatalf("%d: %v, want the registry's answer under %s", status, err, host)
			}
		}
	})
}

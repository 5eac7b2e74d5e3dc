package integration

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// Response is a fully read answer from wharfd.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// String is for failure messages.
func (r Response) String() string {
	b := r.Body
	if len(b) > 2048 {
		b = b[:2048]
	}
	return strings.TrimSpace(http.StatusText(r.Status) + " " + string(b))
}

// JSON decodes the body into v, failing the test on error.
func (r Response) JSON(c *check.C, v any) {
	c.Assert(json.Unmarshal(r.Body, v), check.IsNil, check.Commentf("body: %s", r.Body))
}

// Message is the "message" of a JSON error body.
func (r Response) Message() string {
	var e struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(r.Body, &e)
	return e.Message
}

// Req sends a request to wharfd. hdr is "Key", "Value" pairs.
func (d *Daemon) Req(c *check.C, method, path string, body io.Reader, hdr ...string) Response {
	req, err := http.NewRequest(method, "http://wharfd"+path, body)
	c.Assert(err, check.IsNil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := d.HTTPClient().Do(req)
	c.Assert(err, check.IsNil, check.Commentf("%s %s", method, path))
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	c.Assert(err, check.IsNil)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Get is Req with GET and no body.
func (d *Daemon) Get(c *check.C, path string, hdr ...string) Response {
	return d.Req(c, http.MethodGet, path, nil, hdr...)
}

// StreamLines are the JSON messages of a progress stream.
type StreamLines []map[string]any

// Lines splits a JSON-lines body.
func (r Response) Lines(c *check.C) StreamLines {
	var out StreamLines
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		c.Assert(json.Unmarshal(line, &m), check.IsNil, check.Commentf("stream line %q", line))
		out = append(out, m)
	}
	return out
}

// Err is the errorDetail message in the stream, "" when there is none.
func (s StreamLines) Err() string {
	for _, m := range s {
		if ed, ok := m["errorDetail"].(map[string]any); ok {
			if msg, _ := ed["message"].(string); msg != "" {
				return msg
			}
		}
		if e, ok := m["error"].(string); ok && e != "" {
			return e
		}
	}
	return ""
}

// Texts are every status and stream string, in order.
func (s StreamLines) Texts() []string {
	var out []string
	for _, m := range s {
		for _, k := range []string{"status", "stream"} {
			if v, ok := m[k].(string); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// Has reports whether a status/stream text contains sub.
func (s StreamLines) Has(sub string) bool {
	for _, t := range s.Texts() {
		if strings.Contains(t, sub) {
			return true
		}
	}
	return false
}

// Aux is the last aux object.
func (s StreamLines) Aux() map[string]any {
	var aux map[string]any
	for _, m := range s {
		if a, ok := m["aux"].(map[string]any); ok {
			aux = a
		}
	}
	return aux
}

// RegistryAuth is the X-Registry-Auth value for user/password at server.
func RegistryAuth(user, password, server string) string {
	b, _ := json.Marshal(map[string]string{"username": user, "password": password, "serveraddress": server})
	return base64.URLEncoding.EncodeToString(b)
}

// Import imports a random one-file rootfs as ref through the API and returns
// the image ID from the stream.
func (d *Daemon) Import(c *check.C, ref string, changes ...string) string {
	tarb, err := testregistry.RandomTar("data.bin", 200)
	c.Assert(err, check.IsNil)
	q := url.Values{"fromSrc": {"-"}}
	if ref != "" {
		q.Set("repo", ref)
	}
	for _, ch := range changes {
		q.Add("changes", ch)
	}
	r := d.Req(c, http.MethodPost, "/v1.50/images/create?"+q.Encode(), bytes.NewReader(tarb), "Content-Type", "application/x-tar")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("import %s: %s", ref, r))
	lines := r.Lines(c)
	c.Assert(lines.Err(), check.Equals, "", check.Commentf("import %s", ref))
	for _, t := range lines.Texts() {
		if strings.HasPrefix(t, "sha256:") {
			return strings.TrimSpace(t)
		}
	}
	c.Fatalf("import %s: no image ID in stream %s", ref, r.Body)
	return ""
}

// Inspect is GET /images/NAME/json decoded into a generic map.
func (d *Daemon) Inspect(c *check.C, name string) map[string]any {
	r := d.Get(c, "/v1.50/images/"+name+"/json")
	c.Assert(r.Status, check.Equals, http.StatusOK, check.Commentf("inspect %s: %s", name, r))
	var m map[string]any
	r.JSON(c, &m)
	return m
}

// Pull pulls ref through the API with the given X-Registry-Auth ("" = none)
// and returns the stream.
func (d *Daemon) Pull(c *check.C, image, tag, auth string, extra ...string) (Response, StreamLines) {
	q := url.Values{"fromImage": {image}}
	if tag != "" {
		q.Set("tag", tag)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	var hdr []string
	if auth != "" {
		hdr = []string{"X-Registry-Auth", auth}
	}
	r := d.Req(c, http.MethodPost, "/v1.50/images/create?"+q.Encode(), nil, hdr...)
	if r.Status != http.StatusOK {
		return r, nil
	}
	return r, r.Lines(c)
}

// Push pushes name:tag through the API.
func (d *Daemon) Push(c *check.C, name, tag, auth string) (Response, StreamLines) {
	if auth == "" {
		auth = base64.URLEncoding.EncodeToString([]byte("{}"))
	}
	q := url.Values{}
	if tag != "" {
		q.Set("tag", tag)
	}
	r := d.Req(c, http.MethodPost, "/v1.50/images/"+name+"/push?"+q.Encode(), nil, "X-Registry-Auth", auth)
	if r.Status != http.StatusOK {
		return r, nil
	}
	return r, r.Lines(c)
}

package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Token responses (distribution's token spec, and its OAuth2 form): the
// token, its lifetime, and a refusal's reason.

// MaxTokenBody caps a token response: a token must fit in an HTTP header
// (~16 KiB) and the response may hold it twice plus a refresh token.
const MaxTokenBody = 64 << 10

const maxTokenBody = MaxTokenBody

// defaultTokenLifetime is the distribution spec's default when expires_in is
// absent; tokenExpiryMargin renews a little early so a token does not expire
// between the cache check and the registry.
//
// maxTokenLifetime caps expires_in. A time.Duration counts nanoseconds in
// an int64, so a lifetime over ~292 years would overflow and read as
// already expired: a token fetch for every request. No registry issues
// tokens for longer than a day (Docker Hub 300 s, GCR 3600 s, ECR 12 h);
// a longer claim is held to a day, after which one token request renews it.
const (
	defaultTokenLifetime = 60 * time.Second
	maxTokenLifetime     = 24 * time.Hour
	tokenExpiryMargin    = 5 * time.Second
)

// tokenResponse is a token server's answer: the token in "token" or
// "access_token" (identical when both are given; the OAuth2 form has only
// the second), and its lifetime in seconds.
type tokenResponse struct {
	Token       string          `json:"token"`
	AccessToken string          `json:"access_token"`
	ExpiresIn   json.RawMessage `json:"expires_in"`
}

// readTokenResponse reads a 200 answer of a token server (capped): the
// token and its lifetime. oauth2: only access_token counts.
func readTokenResponse(resp *http.Response, oauth2 bool) (fetched, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenBody+1))
	if err != nil {
		return fetched{}, fmt.Errorf("reading token response from %s: %w", resp.Request.URL.Host, err)
	}
	return parseTokenResponse(resp.Request, body, oauth2)
}

func parseTokenResponse(req *http.Request, body []byte, oauth2 bool) (fetched, error) {
	if len(body) > maxTokenBody {
		// A malformed answer of the registry's token server: 502 (ErrUpstream).
		return fetched{}, InvalidDocument(req.URL.Host, "token response is larger than %d bytes", maxTokenBody)
	}
	var tr tokenResponse
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&tr); err != nil {
		return fetched{}, fmt.Errorf("%s %q: failed to decode response: %w", req.Method, req.URL.Redacted(), err)
	}
	token := tr.AccessToken
	if token == "" && !oauth2 {
		token = tr.Token
	}
	if token == "" {
		return fetched{}, fmt.Errorf("%s %q: empty token returned", req.Method, req.URL.Redacted())
	}
	return fetched{token: token, lifetime: tokenLifetime(tr.ExpiresIn)}, nil
}

// tokenLifetime reads expires_in: a number of seconds (a numeric string is
// accepted too), capped at maxTokenLifetime; absent, zero, negative or
// unreadable is the spec's default.
func tokenLifetime(raw json.RawMessage) time.Duration {
	v := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	if v == "" {
		return defaultTokenLifetime
	}
	f, err := strconv.ParseFloat(v, 64)
	switch {
	case math.IsInf(f, 1) || (err == nil && f >= maxTokenLifetime.Seconds()):
		return maxTokenLifetime
	case err != nil || math.IsNaN(f) || f <= 0:
		return defaultTokenLifetime
	}
	if d := time.Duration(f * float64(time.Second)); d > 0 {
		return d
	}
	return defaultTokenLifetime // under a nanosecond: zero
}

// tokenRefusal is the error of a token server's answer of 400 or more,
// with its reason: token servers (Docker Hub's among them) say why in
// {"details": "…"} rather than the distribution {"errors":[…]}, and the
// user should see "incorrect username or password", not a bare 401.
func tokenRefusal(resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return fmt.Errorf("reading token error from %s: %w", resp.Request.URL.Host, err)
	}
	e := ResponseError(resp.Request.Method, resp, body).(*ErrorResponse)
	if len(e.Errors) == 0 {
		if reason := Reason(body); reason != "" {
			code := CodeUnauthorized
			if resp.StatusCode == http.StatusForbidden {
				code = CodeDenied
			}
			e.Errors = Errors{{Code: code, Message: reason}}
		}
	}
	return e
}

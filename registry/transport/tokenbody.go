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

// Token responses, read on their way to oras-go: captureToken learns a
// token's lifetime (expires_in, which oras-go drops) for tokenCache, and
// reasonAsErrors turns a token server's refusal into the error document
// oras-go reads.

// MaxTokenBody caps a token response: a token must fit in an HTTP header
// (~16 KiB) and the response may hold it twice plus a refresh token.
const MaxTokenBody = 64 << 10

const maxTokenBody = MaxTokenBody

// defaultTokenLifetime is the distribution spec's default when expires_in is
// absent; tokenExpiryMargin renews a little early so a token does not expire
// between the cache check and the registry.
//
// maxTokenLifetime caps expires_in. A time.Duration counts nanoseconds in
// an int64, so a lifetime over ~292 years used to overflow and read as
// already expired: a token fetch for every request. No registry issues
// tokens for longer than a day (Docker Hub 300 s, GCR 3600 s, ECR 12 h);
// a longer claim is held to a day, after which one token request renews it.
const (
	defaultTokenLifetime = 60 * time.Second
	maxTokenLifetime     = 24 * time.Hour
	tokenExpiryMargin    = 5 * time.Second
	maxRememberedTokens  = 4096
)

// captureToken reads a token response (capped) to learn its lifetime and
// hands an identical body on to oras-go.
func (m *challengeMemo) captureToken(resp *http.Response) (*http.Response, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading token response from %s: %w", resp.Request.URL.Host, err)
	}
	if len(body) > maxTokenBody {
		// A malformed answer of the registry's token server: 502 (ErrUpstream).
		return nil, InvalidDocument(resp.Request.URL.Host, "token response is larger than %d bytes", maxTokenBody)
	}
	var tr struct {
		Token       string          `json:"token"`
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
	}
	if json.Unmarshal(body, &tr) == nil {
		lifetime := tokenLifetime(tr.ExpiresIn)
		// issued_at is the server's clock; counting from our own receipt
		// time is never later than the truth by more than the trip.
		until := m.now().Add(lifetime - tokenExpiryMargin)
		m.mu.Lock()
		for _, t := range []string{tr.Token, tr.AccessToken} {
			if t != "" {
				m.expires.Add(t, until)
			}
		}
		m.mu.Unlock()
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
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

// reasonAsErrors rewrites a refused token request's body into the
// distribution {"errors":[…]} form, which is the only one oras-go reads:
// token servers (Docker Hub's among them) say why in {"details": "…"}, and
// the user should see "incorrect username or password", not a bare 401.
func reasonAsErrors(resp *http.Response) (*http.Response, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return nil, fmt.Errorf("reading token error from %s: %w", resp.Request.URL.Host, err)
	}
	var probe struct {
		Errors json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(body, &probe) != nil || (len(probe.Errors) == 0 || string(probe.Errors) == "null") {
		if reason := Reason(body); reason != "" {
			code := "UNAUTHORIZED"
			if resp.StatusCode == http.StatusForbidden {
				code = "DENIED"
			}
			body, _ = json.Marshal(map[string]any{"errors": []map[string]string{{"code": code, "message": reason}}})
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

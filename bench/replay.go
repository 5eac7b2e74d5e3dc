//go:build bench

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// wire is the request sequence one wharf operation sent, as the counters
// logged it: the registry requests (with whether each carried credentials)
// and the token requests.
type wire struct {
	reg    []string // "METHOD /path[?query]"
	regAut []bool
	tok    []string
}

func (e *env) capture() wire {
	w := wire{reg: e.reg.Counter.Requests(), tok: e.reg.TokenCounter.Requests()}
	for _, a := range e.reg.Counter.HeaderValues("Authorization") {
		w.regAut = append(w.regAut, a != "")
	}
	return w
}

// replay sends the same requests with a plain Go client, as fast as the
// protocol allows: the unauthenticated registry requests (the challenge),
// then the token requests, then the authenticated ones, each waiting for
// the previous (each depends on the one before in a real exchange). Its
// duration is the floor for that operation at the proxy's RTT: the same
// round trips and the same server time, without wharf.
func (e *env) replay(ctx context.Context, hc *http.Client, w wire) (time.Duration, error) {
	start := time.Now()
	send := func(method, pathQuery, bearer string, basic bool, tokenOut *string) error {
		host := e.host
		if tokenOut != nil {
			host = e.tokProxy.Addr()
		}
		req, err := http.NewRequestWithContext(ctx, method, "http://"+host+pathQuery, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", manifestAccept)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		if basic {
			req.SetBasicAuth(e.reg.Username, e.reg.Password)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if tokenOut != nil {
			var body struct {
				Token string `json:"token"`
			}
			if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil || body.Token == "" {
				return fmt.Errorf("replay token: %d %v", resp.StatusCode, err)
			}
			*tokenOut = body.Token
			return nil
		}
		_, err = io.Copy(io.Discard, resp.Body)
		if bearer != "" && resp.StatusCode != http.StatusOK {
			return fmt.Errorf("replay %s %s: %d", method, pathQuery, resp.StatusCode)
		}
		return err
	}
	split := func(s string) (string, string) {
		for i := 0; i < len(s); i++ {
			if s[i] == ' ' {
				return s[:i], s[i+1:]
			}
		}
		return "GET", s
	}
	for i, r := range w.reg {
		if !w.regAut[i] {
			m, p := split(r)
			if err := send(m, p, "", false, nil); err != nil {
				return 0, err
			}
		}
	}
	for _, r := range w.tok {
		m, p := split(r)
		var tok string
		if err := send(m, p, "", true, &tok); err != nil {
			return 0, err
		}
		if u, err := url.Parse(p); err == nil {
			for _, sc := range u.Query()["scope"] {
				if f := strings.Split(sc, ":"); len(f) == 3 {
					e.tokens[f[1]] = tok
				}
			}
		}
	}
	for i, r := range w.reg {
		if w.regAut[i] {
			m, p := split(r)
			if err := send(m, p, e.tokens[repoOf(p)], false, nil); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start), nil
}

// repoOf is the repository of a /v2/REPO/(manifests|blobs|tags)/… path.
func repoOf(p string) string {
	p = strings.TrimPrefix(p, "/v2/")
	for _, sep := range []string{"/manifests/", "/blobs/", "/tags/"} {
		if i := strings.Index(p, sep); i >= 0 {
			return p[:i]
		}
	}
	return p
}

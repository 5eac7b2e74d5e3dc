package testregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client speaks just enough of the distribution API to upload fixtures: it
// answers a 401 challenge (Basic, or Bearer through the realm) once per request.
type Client struct {
	// Base is the registry's base URL, e.g. Registry.URL.
	Base     string
	Username string
	Password string
	HTTP     *http.Client
}

// Client returns a fixture client for r with its default credentials.
func (r *Registry) Client() *Client {
	return &Client{Base: r.URL, Username: r.Username, Password: r.Password}
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: insecureTransport()}
}

// maxErrBody caps how much of an error answer is quoted (4 KiB).
const maxErrBody = 4 << 10

// do sends a request built by mk (called again for the retry), answering a
// 401 challenge once.
func (c *Client) do(ctx context.Context, mk func() (*http.Request, error)) (*http.Response, error) {
	req, err := mk()
	if err != nil {
		return nil, err
	}
	req = req.WithContext(ctx)
	resp, err := c.http().Do(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	challenge := resp.Header.Get("Www-Authenticate")
	resp.Body.Close()
	req, err = mk()
	if err != nil {
		return nil, err
	}
	req = req.WithContext(ctx)
	if err := c.authorize(ctx, req, challenge); err != nil {
		return nil, err
	}
	return c.http().Do(req)
}

func (c *Client) authorize(ctx context.Context, req *http.Request, challenge string) error {
	scheme, params := parseChallenge(challenge)
	switch strings.ToLower(scheme) {
	case "basic":
		req.SetBasicAuth(c.Username, c.Password)
		return nil
	case "bearer":
		u, err := url.Parse(params["realm"])
		if err != nil {
			return fmt.Errorf("testregistry: bad realm %q: %w", params["realm"], err)
		}
		q := u.Query()
		q.Set("service", params["service"])
		if s := params["scope"]; s != "" {
			q.Set("scope", s)
		}
		u.RawQuery = q.Encode()
		treq, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if c.Username != "" {
			treq.SetBasicAuth(c.Username, c.Password)
		}
		resp, err := c.http().Do(treq)
		if err != nil {
			return fmt.Errorf("testregistry: token: %w", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("testregistry: token: %s: %s", resp.Status, body)
		}
		var tr struct {
			Token       string `json:"token"`
			AccessToken string `json:"access_token"`
		}
		if err := json.Unmarshal(body, &tr); err != nil {
			return fmt.Errorf("testregistry: token: %w", err)
		}
		tok := tr.Token
		if tok == "" {
			tok = tr.AccessToken
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		return nil
	}
	return fmt.Errorf("testregistry: unsupported challenge %q", challenge)
}

// parseChallenge splits `Bearer realm="…",service="…",scope="…"`.
func parseChallenge(h string) (string, map[string]string) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	params := map[string]string{}
	for rest != "" {
		rest = strings.TrimLeft(rest, " ,")
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if strings.HasPrefix(v, `"`) {
			end := strings.Index(v[1:], `"`)
			if end < 0 {
				params[k] = v[1:]
				break
			}
			params[k] = v[1 : 1+end]
			rest = v[2+end:]
		} else {
			val, r, _ := strings.Cut(v, ",")
			params[k] = val
			rest = r
		}
	}
	return scheme, params
}

// PutBlob uploads a blob monolithically (POST then PUT ?digest=) unless the
// registry already has it.
func (c *Client) PutBlob(ctx context.Context, repo string, b Blob) error {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		return http.NewRequest(http.MethodHead, c.Base+"/v2/"+repo+"/blobs/"+b.Digest, nil)
	})
	if err != nil {
		return fmt.Errorf("testregistry: head blob: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	resp, err = c.do(ctx, func() (*http.Request, error) {
		return http.NewRequest(http.MethodPost, c.Base+"/v2/"+repo+"/blobs/uploads/", nil)
	})
	if err != nil {
		return fmt.Errorf("testregistry: start upload: %w", err)
	}
	if err := expect(resp, http.StatusAccepted); err != nil {
		return fmt.Errorf("testregistry: start upload to %s: %w", repo, err)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return fmt.Errorf("testregistry: upload location: %w", err)
	}
	base, _ := url.Parse(c.Base)
	loc = base.ResolveReference(loc)
	q := loc.Query()
	q.Set("digest", b.Digest)
	loc.RawQuery = q.Encode()
	resp, err = c.do(ctx, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPut, loc.String(), bytes.NewReader(b.Data))
		if err == nil {
			req.Header.Set("Content-Type", "application/octet-stream")
		}
		return req, err
	})
	if err != nil {
		return fmt.Errorf("testregistry: put blob: %w", err)
	}
	if err := expect(resp, http.StatusCreated); err != nil {
		return fmt.Errorf("testregistry: put blob %s: %w", b.Digest, err)
	}
	return nil
}

// PutManifest uploads a manifest under ref (a tag or a digest).
func (c *Client) PutManifest(ctx context.Context, repo, ref string, m Blob) error {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPut, c.Base+"/v2/"+repo+"/manifests/"+ref, bytes.NewReader(m.Data))
		if err == nil {
			req.Header.Set("Content-Type", m.MediaType)
		}
		return req, err
	})
	if err != nil {
		return fmt.Errorf("testregistry: put manifest: %w", err)
	}
	if err := expect(resp, http.StatusCreated); err != nil {
		return fmt.Errorf("testregistry: put manifest %s:%s: %w", repo, ref, err)
	}
	return nil
}

// DeleteManifest deletes a manifest by digest.
func (c *Client) DeleteManifest(ctx context.Context, repo, dgst string) error {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		return http.NewRequest(http.MethodDelete, c.Base+"/v2/"+repo+"/manifests/"+dgst, nil)
	})
	if err != nil {
		return fmt.Errorf("testregistry: delete manifest: %w", err)
	}
	return expect(resp, http.StatusAccepted)
}

// GetManifest fetches a manifest by tag or digest, returning its bytes, media
// type and Docker-Content-Digest.
func (c *Client) GetManifest(ctx context.Context, repo, ref string) ([]byte, string, string, error) {
	resp, err := c.do(ctx, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodGet, c.Base+"/v2/"+repo+"/manifests/"+ref, nil)
		if err == nil {
			req.Header.Set("Accept", strings.Join([]string{MediaTypeOCIManifest, MediaTypeOCIIndex, MediaTypeDockerManifest, MediaTypeDockerList}, ", "))
		}
		return req, err
	})
	if err != nil {
		return nil, "", "", fmt.Errorf("testregistry: get manifest: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", "", expect(resp, http.StatusOK)
	}
	// Manifests are capped at 4 MiB by every registry; fixtures are far smaller.
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return b, resp.Header.Get("Content-Type"), resp.Header.Get("Docker-Content-Digest"), err
}

func expect(resp *http.Response, status int) error {
	defer resp.Body.Close()
	if resp.StatusCode == status {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrBody))
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrBody))
	return fmt.Errorf("%s (want %d): %s", resp.Status, status, bytes.TrimSpace(body))
}

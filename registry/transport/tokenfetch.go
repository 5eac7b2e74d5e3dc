package transport

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// The token fetch (distribution's token and OAuth2 specs), with the
// safeguards of oras-go's auth.Client (its advisories GHSA-xf85-363p-868w,
// GHSA-mm27-wq9c-mxxr, GHSA-vh4v-2xq2-g5cg, GHSA-xc97-9f2f-9hrx):
//   - a realm is http or https, and http only when the registry itself was
//     reached over http; a realm on another host must not be, nor resolve
//     to, a blocked address (validateRealm); every redirect of a token
//     request is held to the same rules (sendToken);
//   - a token request's body (the refresh token) is never resent to
//     another origin, and Authorization never follows a redirect off its
//     origin (sendToken, CheckRedirect);
//   - the credentials are the ones CredentialFunc gives for the registry
//     host itself: they reach the realm only as the basic-to-token
//     exchange the registry asked for.

// basicToken is the basic-auth token of cred.
func basicToken(cred Credential) (fetched, error) {
	if cred == (Credential{}) {
		return fetched{}, ErrNoBasicCredential
	}
	if cred.Username == "" || cred.Password == "" {
		return fetched{}, errors.New("missing username or password for basic auth")
	}
	return fetched{token: base64.StdEncoding.EncodeToString([]byte(cred.Username + ":" + cred.Password))}, nil
}

// fetchBearer gets a token for scopes from realm: host's registry token as
// it is; else the OAuth2 refresh grant for an identity token; else a GET
// with basic auth (or anonymous).
func (c *Client) fetchBearer(ctx context.Context, registryURL *url.URL, host, realm, service string, scopes []string) (fetched, error) {
	cred := c.credential(host)
	if cred.AccessToken != "" {
		return fetched{token: cred.AccessToken}, nil
	}
	var req *http.Request
	var err error
	oauth2 := cred.RefreshToken != ""
	if oauth2 {
		form := url.Values{}
		form.Set("grant_type", "refresh_token")
		form.Set("refresh_token", cred.RefreshToken)
		form.Set("service", service)
		form.Set("client_id", c.clientID)
		if len(scopes) != 0 {
			form.Set("scope", strings.Join(scopes, " "))
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, realm, strings.NewReader(form.Encode()))
		if err != nil {
			return fetched{}, err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, realm, nil)
		if err != nil {
			return fetched{}, err
		}
		if cred.Username != "" || cred.Password != "" {
			req.SetBasicAuth(cred.Username, cred.Password)
		}
		q := req.URL.Query()
		if service != "" {
			q.Set("service", service)
		}
		for _, s := range scopes {
			q.Add("scope", s)
		}
		req.URL.RawQuery = q.Encode()
	}
	resp, err := c.sendToken(req, registryURL)
	if err != nil {
		// The realm is gone (a restarted registry may no longer use
		// tokens): ask the registries again next time.
		c.forgetRealm(realm)
		return fetched{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode >= 500 {
			c.forgetRealm(realm)
		}
		return fetched{}, tokenRefusal(resp)
	}
	return readTokenResponse(resp, oauth2)
}

func (c *Client) forgetRealm(realm string) {
	if c.memo != nil {
		c.memo.forgetRealm(realm)
	}
}

// sendToken sends a token request: every redirect hop is validated as
// the realm was (against registryURL), Authorization is dropped once the
// chain leaves the first request's origin, and a redirect that would
// resend the body (307/308: the refresh token) to another origin fails.
func (c *Client) sendToken(req *http.Request, registryURL *url.URL) (*http.Response, error) {
	for k, v := range c.header {
		req.Header[k] = append(req.Header[k], v...)
	}
	hc := *c.http
	next := c.http.CheckRedirect
	hc.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if err := validateRealm(r.Context(), r.URL.String(), registryURL, c.blocked); err != nil {
			return fmt.Errorf("redirect of token request rejected: %w", err)
		}
		if leftOrigin(via, r) {
			if r.Body != nil && r.Body != http.NoBody {
				return fmt.Errorf("%s %q: refusing to resend a token request body to another origin", r.Method, r.URL.Redacted())
			}
			r.Header.Del("Authorization")
		}
		if next != nil {
			return next(r, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return hc.Do(req)
}

// lookupIPAddr resolves a realm's host name (tests replace it).
var lookupIPAddr = net.DefaultResolver.LookupIPAddr

var (
	nat64Prefix  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4Prefix = netip.MustParsePrefix("2002::/16")

	// oras-go's DefaultBlockedRealmPrefixes: loopback, link-local (cloud
	// metadata among them), link-local multicast, unspecified, and the
	// metadata addresses outside link-local.
	defaultBlockedRealmPrefixes = []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("fe80::/10"),
		netip.MustParsePrefix("224.0.0.0/24"),
		netip.MustParsePrefix("ff02::/16"),
		netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("::/128"),
		netip.MustParsePrefix("100.100.100.200/32"),
		netip.MustParsePrefix("fd00:ec2::254/128"),
		netip.MustParsePrefix("fd00:ec2::23/128"),
		netip.MustParsePrefix("fd20:ce::254/128"),
		netip.MustParsePrefix("168.63.129.16/32"),
	}
)

// DefaultBlockedRealmPrefixes is a copy of the addresses a bearer realm on
// another host than its registry's must not be or resolve to.
func DefaultBlockedRealmPrefixes() []netip.Prefix {
	return slices.Clone(defaultBlockedRealmPrefixes)
}

// LoopbackRealmPrefixes is DefaultBlockedRealmPrefixes without loopback,
// for registries on this machine: a local registry at localhost:5000 whose
// token server is 127.0.0.1:5001 must work, and a loopback registry
// sending us to a loopback realm gains nothing; metadata and link-local
// addresses stay refused.
func LoopbackRealmPrefixes() []netip.Prefix {
	return slices.DeleteFunc(DefaultBlockedRealmPrefixes(), func(p netip.Prefix) bool { return p.Addr().IsLoopback() })
}

// unwrapRealmAddr is the IPv4 address inside an IPv4-mapped, NAT64 or 6to4
// address, else addr unmapped, without zone.
func unwrapRealmAddr(addr netip.Addr) netip.Addr {
	addr = addr.Unmap().WithZone("")
	if !addr.Is6() {
		return addr
	}
	b := addr.As16()
	switch {
	case nat64Prefix.Contains(addr):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	case sixTo4Prefix.Contains(addr):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	return addr
}

func blockedPrefix(addr netip.Addr, prefixes []netip.Prefix) (netip.Prefix, bool) {
	check := unwrapRealmAddr(addr)
	for _, p := range prefixes {
		if p.Contains(check) || p.Contains(addr) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// validateRealm refuses a bearer realm that would take credentials where
// they must not go: a scheme other than http(s); http when the registry
// was reached over https; a host other than the registry's that is, or
// resolves to, an address in prefixes. A failed look-up passes (behind a
// proxy the name may resolve only there; a bogus name fails to dial).
func validateRealm(ctx context.Context, realm string, registryURL *url.URL, prefixes []netip.Prefix) error {
	if realm == "" {
		return nil
	}
	u, err := url.Parse(realm)
	if err != nil {
		return fmt.Errorf("failed to parse bearer realm %q: %w", realm, err)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if registryURL != nil && registryURL.Scheme == "https" {
			return fmt.Errorf("bearer realm %q uses http but registry was contacted over https", u.Redacted())
		}
	default:
		return fmt.Errorf("bearer realm %q uses unsupported scheme %q", u.Redacted(), u.Scheme)
	}
	host := u.Hostname()
	if registryURL != nil && strings.EqualFold(host, registryURL.Hostname()) {
		return nil
	}
	if len(prefixes) == 0 {
		return nil
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if p, ok := blockedPrefix(addr, prefixes); ok {
			return fmt.Errorf("bearer realm host %q is %s, in blocked prefix %s", host, unwrapRealmAddr(addr), p)
		}
		return nil
	}
	addrs, err := lookupIPAddr(ctx, host)
	if err != nil {
		return nil
	}
	for _, ip := range addrs {
		addr, ok := netip.AddrFromSlice(ip.IP)
		if !ok {
			continue
		}
		if p, ok := blockedPrefix(addr, prefixes); ok {
			return fmt.Errorf("bearer realm host %q resolves to %s, in blocked prefix %s", host, unwrapRealmAddr(addr), p)
		}
	}
	return nil
}

// leftOrigin: the redirect chain via, then req, has left the origin of its
// first request (for good, even if a later hop comes back).
func leftOrigin(via []*http.Request, req *http.Request) bool {
	for _, r := range via[1:] {
		if !sameHTTPOrigin(via[0].URL, r.URL) {
			return true
		}
	}
	return !sameHTTPOrigin(via[0].URL, req.URL)
}

// sameHTTPOrigin: same scheme, host and port (default ports filled in).
func sameHTTPOrigin(a, b *url.URL) bool {
	return canonicalHostPort(a.Scheme, a.Host) == canonicalHostPort(b.Scheme, b.Host)
}

// isHTTPSUpgrade: from http on the default port to https on the default
// port of the same host name.
func isHTTPSUpgrade(from, to *url.URL) bool {
	return from.Scheme == "http" && to.Scheme == "https" &&
		strings.EqualFold(from.Hostname(), to.Hostname()) &&
		(from.Port() == "" || from.Port() == "80") &&
		(to.Port() == "" || to.Port() == "443")
}

// safeHTTPSUpgrade: the 401 came from last, reached from original by
// redirects that each stayed on the origin or upgraded it to https, with
// no userinfo anywhere.
func safeHTTPSUpgrade(original, last *http.Request) bool {
	if !isHTTPSUpgrade(original.URL, last.URL) {
		return false
	}
	if original.Host != "" && !strings.EqualFold(original.Host, original.URL.Host) {
		return false
	}
	for req := last; ; {
		if req.URL.User != nil {
			return false
		}
		if req.Response == nil {
			return sameHTTPOrigin(original.URL, req.URL)
		}
		prev := req.Response.Request
		if prev == nil || (!sameHTTPOrigin(prev.URL, req.URL) && !isHTTPSUpgrade(prev.URL, req.URL)) {
			return false
		}
		req = prev
	}
}

package client

import (
	"net/http"

	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
)

// AuthHeader is the header that carries registry credentials.
const AuthHeader = "X-Registry-Auth"

// EncodeAuth returns the X-Registry-Auth value for a: base64url (padded) JSON.
func EncodeAuth(a registry.AuthConfig) (string, error) {
	return authconfig.Encode(a)
}

// authHeader returns the header set for a, or none for nil.
func authHeader(a *registry.AuthConfig) (http.Header, error) {
	if a == nil {
		return nil, nil
	}
	v, err := EncodeAuth(*a)
	if err != nil {
		return nil, err
	}
	return http.Header{AuthHeader: {v}}, nil
}

// authHeaderAlways is authHeader that sends "{}" for anonymous, as the
// docker CLI does for push (dockerd rejects a push without the header).
func authHeaderAlways(a *registry.AuthConfig) (http.Header, error) {
	if a == nil {
		a = &registry.AuthConfig{}
	}
	return authHeader(a)
}

// credentialHeaders are X-Registry-Auth for a (with always, "{}" for
// anonymous) and X-Registry-Config for regs (none when empty): the daemon
// uses regs instead of a when it gets them, each set for its own registry.
func credentialHeaders(a *registry.AuthConfig, regs map[string]registry.AuthConfig, always bool) (http.Header, error) {
	h, err := authHeader(a)
	if always {
		h, err = authHeaderAlways(a)
	}
	if err != nil {
		return nil, err
	}
	rh, err := registryConfigHeader(regs)
	if err != nil || rh == nil {
		return h, err
	}
	if h == nil {
		return rh, nil
	}
	h.Set(ConfigHeader, rh.Get(ConfigHeader))
	return h, nil
}

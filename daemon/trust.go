package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph"
	"github.com/wharfproject/wharf/trust/notation"
	"github.com/wharfproject/wharf/trust/policy"
)

// The signature policy: a containers-policy.json(5) file, from
// --signature-policy or "signature-policy", else /etc/wharf/policy.json
// ($XDG_CONFIG_HOME/wharf/policy.json when not root) when it exists.
// Without one, behaviour is as before: nothing is verified unless asked
// (verify=1), nothing refused. A policy that does not load stops the start
// and, on SIGHUP, keeps the running one.

// defaultPolicyFile is the policy read when none is named, if it exists.
func (e Env) defaultPolicyFile() string {
	if !e.rootless() {
		return "/etc/wharf/policy.json"
	}
	if d := e.getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "wharf", "policy.json")
	}
	if e.Home == "" {
		return ""
	}
	return filepath.Join(e.Home, ".config", "wharf", "policy.json")
}

// loadPolicy reads the policy cfg names (or the default one when it
// exists): nil without one.
func loadPolicy(cfg *Config, env Env) (*policy.Policy, error) {
	path, explicit := cfg.SignaturePolicy, cfg.SignaturePolicy != ""
	if !explicit {
		path = env.defaultPolicyFile()
		if path == "" {
			return nil, nil
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	p, err := policy.Load(path, verifiers())
	if err != nil {
		return nil, fmt.Errorf("signature policy: %w", err) // err names the file
	}
	return p, nil
}

// verifiers builds each requirement's verifier from the packages that
// verify offline: trust/sigstore (cosign) and trust/notation.
func verifiers() policy.Options {
	return policy.Options{
		NewSigstore: newSigstoreVerifier,
		NewNotation: func(c policy.NotationConfig) (policy.Verifier, error) {
			return notation.New(notation.Config{TrustStore: c.TrustStore, TrustedIdentities: c.TrustedIdentities, Level: c.Level, Now: c.Now})
		},
	}
}

// policyRevision is the loaded policy's revision, "" without one.
func policyRevision(p *policy.Policy) string {
	if p == nil {
		return ""
	}
	return p.Revision()
}

// policyJudge keeps a nil *Policy a nil interface.
func policyJudge(p *policy.Policy) graph.Judge {
	if p == nil {
		return nil
	}
	return p
}

func orNone(rev string) string {
	if rev == "" {
		return "none"
	}
	return rev
}

// TrustPolicy implements server.SystemBackend: the policy as `wharf trust
// show` prints it.
func (d *Daemon) TrustPolicy(ctx context.Context, name string) (*types.TrustPolicy, error) {
	ip := d.policy.Load()
	out := &types.TrustPolicy{Scopes: []types.TrustScope{}}
	if ip == nil || ip.p == nil {
		return out, nil
	}
	p := ip.p
	out.Path, out.Revision = ip.path, p.Revision()
	if name == "" {
		out.Scopes = p.ShowAll()
		return out, nil
	}
	ref, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return nil, fmt.Errorf("invalid reference format: %s: %v%.0w", name, err, errdefs.ErrInvalidArgument)
	}
	out.Scopes = []types.TrustScope{p.Show(reference.TagNameOnly(ref))}
	return out, nil
}

// installPolicy makes p the policy of every operation from now on (nil:
// none); the verdicts cached under the old one are dropped.
func (d *Daemon) installPolicy(p *policy.Policy, cfg *Config, env Env) {
	d.images.SetPolicy(policyJudge(p))
	path := cfg.SignaturePolicy
	if path == "" && p != nil {
		path = env.defaultPolicyFile()
	}
	d.policy.Store(&installedPolicy{p: p, path: path})
}

// installedPolicy is the policy in force and the file it came from.
type installedPolicy struct {
	p    *policy.Policy
	path string
}

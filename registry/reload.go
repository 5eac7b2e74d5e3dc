package registry

import (
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/wharfproject/wharf/registry/hosts"
)

// Reload replaces the registry configuration — insecure registries,
// mirrors, add- and block-registry, certs dirs and the hosts.toml files in
// them, re-read now — and says what changed. opts' Transport, Timeout,
// UserAgent and Logger are those of NewService and are ignored here.
// Invalid options are an error and change nothing. Requests already
// running finish on the old configuration's endpoints; the idle
// connections of the old per-host set-ups are closed, so a changed
// certificate is used from the next connection on.
func (s *Service) Reload(opts ServiceOptions) ([]string, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	cfg, err := hosts.New(opts.hostsOptions())
	if err != nil {
		return nil, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	old := s.state.Load()
	changes := hosts.Diff(old.cfg, cfg)
	s.state.Store(&serviceState{cfg: cfg})
	s.http.Reload(cfg)
	return changes, nil
}

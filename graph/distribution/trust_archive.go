package distribution

import (
	"context"

	"github.com/wharfproject/wharf/graph/store"
	"github.com/wharfproject/wharf/trust"
)

// AdmitLoad is admitArchive for docker load (the docker-archive
// transport); graph/archive asks it before a load reads its archive.
func (s *Service) AdmitLoad(ctx context.Context) error {
	return s.admitArchive(ctx, "load", trust.TransportDockerArchive)
}

// admitArchive is the policy's check on images arriving by an archive
// transport (trust.TransportDockerArchive for docker load,
// trust.TransportOCIArchive for sync's archive import): nil without a
// policy or when the transport's scope (else the policy's default)
// accepts, else an error (PermissionDenied, a 403) naming the transport,
// the scope, the requirement and the reason, and a "refused" event.
//
// It is asked before the archive's first byte is read: the only scope an
// archive streamed to the daemon can have is its transport's "" (no file
// path names it), so the verdict does not depend on what the archive
// holds, and a refused archive leaves nothing behind.
func (s *Service) admitArchive(ctx context.Context, op, transport string) error {
	j := s.policy()
	if j == nil {
		return nil
	}
	v := j.EvaluateTransport(ctx, transport, trust.Image{})
	s.verdicts.count(string(v.Decision))
	if v.Decision == trust.Accepted {
		return nil
	}
	t := trustAnswer(v, "")
	store.Emit(ctx, s.events, store.Event{Actor: transport, Action: "refused", Attrs: map[string]string{
		"name": transport, "operation": op, "scope": t.Scope, "requirement": t.Requirement, "reason": t.Reason,
	}})
	return errRejected(op, t)
}

package registry

import (
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
)

// mirrorRetryAfter is how long a failed mirror is passed over before it is
// tried again. A mirror host that went away without a word (powered off,
// packets dropped) costs every request the 10 s dial timeout; passing it
// over for 10 s after a failure bounds that to one request per window,
// and a mirror that comes back is used again within 10 s.
const mirrorRetryAfter = 10 * time.Second

// mirrorState is what wharfd knows of a mirror host's health.
type mirrorState struct {
	down  atomic.Bool  // failing now: its first failure was logged as a warning
	until atomic.Int64 // unix nanoseconds before which it is passed over
}

func (s *Service) mirrorStateOf(host string) *mirrorState {
	v, _ := s.mirrorDown.LoadOrStore(host, new(mirrorState))
	return v.(*mirrorState)
}

// mirrorPassedOver reports whether mirror host failed less than
// mirrorRetryAfter ago, so that the next host is asked straight away.
func (s *Service) mirrorPassedOver(host string) bool {
	v, ok := s.mirrorDown.Load(host)
	return ok && time.Now().UnixNano() < v.(*mirrorState).until.Load()
}

// mirrorFailed records that mirror host failed a read of index and that
// the next host is tried. The first failure of a burst is a warning (an
// operator must learn that the shared cache is down, but 60 inspects
// through a dead mirror must not write 60 warnings); the rest, and a
// mirror that lacks what was asked (not found: the next host may have it),
// are debug lines. err names the host only, never credentials.
func (s *Service) mirrorFailed(host, index string, err error) {
	log := s.log.WithError(err).WithField("mirror", host).WithField("registry", index)
	if errdefs.IsNotFound(err) {
		log.Debug("mirror does not have it; trying the next host")
		return
	}
	st := s.mirrorStateOf(host)
	st.until.Store(time.Now().Add(s.mirrorRetry).UnixNano())
	if st.down.CompareAndSwap(false, true) {
		log.Warn("mirror failed; falling back to the next host (further failures of this mirror are logged at debug level until it answers again; it is passed over for 10s after each)")
		return
	}
	log.Debug("mirror failed; trying the next host")
}

// mirrorAnswered ends a burst of failures of mirror host.
func (s *Service) mirrorAnswered(host string) {
	v, ok := s.mirrorDown.Load(host)
	if !ok {
		return
	}
	st := v.(*mirrorState)
	st.until.Store(0)
	if st.down.CompareAndSwap(true, false) {
		s.log.WithField("mirror", host).Info("mirror answers again")
	}
}

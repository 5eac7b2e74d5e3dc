package registry

import (
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	registrytypes "github.com/moby/moby/api/types/registry"
	"github.com/sirupsen/logrus"
	"github.com/wharfproject/wharf/internal/imageref"
	"github.com/wharfproject/wharf/registry/blobs"
	"github.com/wharfproject/wharf/registry/hosts"
	"github.com/wharfproject/wharf/registry/listing"
	"github.com/wharfproject/wharf/registry/referrers"
	"github.com/wharfproject/wharf/registry/transport"
	"github.com/wharfproject/wharf/registry/upload"
	"golang.org/x/sync/singleflight"
)

// Service is the registry client policy: names, endpoints, auth, caches.
// One per daemon; safe for concurrent use.
type Service struct {
	opts ServiceOptions
	log  *logrus.Entry

	// state is the configuration, swapped whole by Reload: a decision
	// reads it once, so it runs on the old or the new configuration,
	// never a mix of both.
	state       atomic.Pointer[serviceState]
	reloadMu    sync.Mutex    // one Reload at a time
	mirrorDown  sync.Map      // mirror host → *mirrorState (mirrors.go)
	mirrorRetry time.Duration // mirrorRetryAfter; tests shorten it
	blobBackoff time.Duration // blobs.ReopenBackoff; tests shorten it
	// wholeUploadMax: blobs of at most this many bytes are uploaded in
	// one PUT (upload.DefaultWholeMax); tests that study the PATCH path
	// set it below their blobs' size (-1: none).
	wholeUploadMax int64
	// uploadBackoff is the first wait after a broken PATCH (0: the
	// upload's 250 ms); tests shorten it.
	uploadBackoff time.Duration
	// listLimit bounds one tag or catalog listing (listing's defaults
	// when zero); tests of the bounds set it smaller.
	listLimit listing.Limit
	// configRead, when set, is called after every read of the
	// configuration: tests reload in the middle of a decision with it.
	configRead func()

	http    *transport.Stack // the one HTTP stack (registry/transport)
	client  *http.Client     // http's Client
	content *contentCache
	warm    *repoSet
	obs     Observer  // metrics.go
	tags    *tagCache // tag → digest answers, read only under a max-age (tagcache.go)
	// noReferrersAPI: hosts that answered the referrers API with 404;
	// they are asked through the tag schema only.
	noReferrersAPI *referrers.NoAPI
	blobs          *blobLocations   // where blobs are known to be, for mounts (transfer_mount.go)
	stores         *blobs.Locations // blob store redirects of range reads (blob_range.go)

	flight singleflight.Group
}

// NewService validates opts and returns a Service.
func NewService(opts ServiceOptions) (*Service, error) {
	return newService(opts, transport.RetryMaxWait)
}

func newService(opts ServiceOptions, maxWait time.Duration) (*Service, error) {
	cfg, err := hosts.New(opts.hostsOptions())
	if err != nil {
		return nil, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	stack, err := transport.New(cfg, transport.Options{Timeout: opts.Timeout, Transport: opts.Transport, Observer: opts.Observer, MaxWait: maxWait})
	if err != nil {
		return nil, fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
	}
	log := opts.Logger
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = logrus.NewEntry(l)
	}
	s := &Service{
		opts:           opts,
		log:            log,
		http:           stack,
		client:         stack.Client(),
		content:        newContentCache(contentCacheBytes),
		warm:           newRepoSet(maxWarmRepos),
		noReferrersAPI: referrers.NewNoAPI(),
		tags:           newTagCache(maxTagAnswers),
		blobs:          newBlobLocations(),
		stores:         blobs.NewLocations(blobs.MaxLocations),
		mirrorRetry:    mirrorRetryAfter,
		blobBackoff:    blobs.ReopenBackoff,
		wholeUploadMax: upload.DefaultWholeMax,
	}
	s.state.Store(&serviceState{cfg: cfg})
	s.setObserver(opts.Observer)
	return s, nil
}

// serviceState is what Reload replaces (the transport's per-host set-ups
// are replaced beside it: transport.Stack.Reload).
type serviceState struct {
	cfg *hosts.Config
}

// config is the current configuration. A decision reads it once and
// passes it on, so that a reload cannot mix two configurations in it.
func (s *Service) config() *hosts.Config {
	cfg := s.state.Load().cfg
	if s.configRead != nil {
		s.configRead()
	}
	return cfg
}

// ServiceConfig is the RegistryConfig of GET /info.
func (s *Service) ServiceConfig() *registrytypes.ServiceConfig {
	cfg := s.config()
	cidrs := append([]netip.Prefix{}, cfg.InsecureCIDRs()...)
	mirrors := cfg.Mirrors()
	sc := &registrytypes.ServiceConfig{
		InsecureRegistryCIDRs: cidrs,
		IndexConfigs: map[string]*registrytypes.IndexInfo{
			DefaultIndexName: {Name: DefaultIndexName, Mirrors: mirrors, Secure: true, Official: true},
		},
		Mirrors: append([]string{}, mirrors...),
	}
	for _, h := range cfg.InsecureHosts() {
		sc.IndexConfigs[h] = &registrytypes.IndexInfo{Name: h, Mirrors: []string{}, Secure: false, Official: false}
	}
	return sc
}

// indexInfo describes index (already normalised).
func indexInfo(cfg *hosts.Config, index string) *registrytypes.IndexInfo {
	if index == DefaultIndexName {
		return &registrytypes.IndexInfo{Name: index, Mirrors: cfg.Mirrors(), Secure: true, Official: true}
	}
	return &registrytypes.IndexInfo{Name: index, Mirrors: []string{}, Secure: cfg.Secure(index)}
}

// RepositoryInfo describes the repository of a fully qualified name.
// A blocked registry is errdefs.ErrPermissionDenied.
func (s *Service) RepositoryInfo(name reference.Named) (*RepositoryInfo, error) {
	return repositoryInfo(s.config(), name)
}

// repositoryInfo is RepositoryInfo under one configuration: blocked and
// secure from the same one.
func repositoryInfo(cfg *hosts.Config, name reference.Named) (*RepositoryInfo, error) {
	if name == nil {
		return nil, fmt.Errorf("no repository name%.0w", errdefs.ErrInvalidArgument)
	}
	index := hosts.NormaliseIndexName(reference.Domain(name))
	if cfg.Blocked(index) {
		return nil, blockedError(index)
	}
	info := indexInfo(cfg, index)
	return &RepositoryInfo{
		Name:     reference.TrimNamed(name),
		Index:    info,
		Official: info.Official && strings.HasPrefix(reference.Path(name), "library/"),
	}, nil
}

// Candidates returns the fully qualified references to try for ref, in
// order: ref itself when it names a registry; for a short name the
// AddRegistries in order, then docker.io. Blocked registries are left out;
// if none is left, errdefs.ErrPermissionDenied. The configuration is read
// once.
func (s *Service) Candidates(ref imageref.Ref) ([]reference.Named, error) {
	return candidates(s.config(), ref)
}

func candidates(cfg *hosts.Config, ref imageref.Ref) ([]reference.Named, error) {
	n := ref.Named()
	if !ref.Short() {
		if index := hosts.NormaliseIndexName(reference.Domain(n)); cfg.Blocked(index) {
			return nil, blockedError(index)
		}
		return []reference.Named{n}, nil
	}
	regs, blocked := searchOrder(cfg)
	if len(regs) == 0 {
		return nil, blockedError(strings.Join(blocked, ", "))
	}
	out := make([]reference.Named, 0, len(regs))
	for _, r := range regs {
		if r == DefaultIndexName {
			out = append(out, n)
			continue
		}
		c, err := ref.On(r)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// SearchRegistries are the registries a short name is searched on, in
// order: the add-registry entries not blocked, then docker.io unless it is
// blocked (GET /info's WharfSearchRegistries: the CLI sends credentials
// for each, and each gets only its own).
func (s *Service) SearchRegistries() []string {
	regs, _ := searchOrder(s.config())
	return regs
}

// searchOrder is the one search order of short names under cfg, and the
// registries left out of it because they are blocked.
func searchOrder(cfg *hosts.Config) (regs, blocked []string) {
	for _, r := range cfg.AddRegistries() {
		if r == DefaultIndexName {
			continue // docker.io comes last, once
		}
		if cfg.Blocked(r) {
			blocked = append(blocked, r)
			continue
		}
		regs = append(regs, r)
	}
	if cfg.Blocked(DefaultIndexName) {
		blocked = append(blocked, DefaultIndexName)
	} else {
		regs = append(regs, DefaultIndexName)
	}
	return regs, blocked
}

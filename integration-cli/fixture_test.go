package integration

import (
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// suiteFixture is what a suite starts in SetUpSuite and what its
// TearDownSuite takes down: real registries, wharfds, and any other server
// or client. A suite embeds it and starts through it:
//
//	type CopySuite struct {
//		suiteFixture
//		src, dst *testregistry.Registry
//		d        *Daemon
//	}
//
//	func (s *CopySuite) SetUpSuite(c *check.C) {
//		s.src = s.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken})
//		s.dst = s.startRegistry(c, testregistry.Options{})
//		s.d = s.startDaemon(c)
//	}
//
// The embedded TearDownSuite is the suite's (check.v1 finds the promoted
// method): it stops the daemons, each of which must exit cleanly on
// SIGTERM, then closes the rest, last started first. A suite with work of
// its own before that defines TearDownSuite and ends it with
// s.suiteFixture.TearDownSuite(c). Whatever fails, everything is closed
// and every daemon ended.
type suiteFixture struct {
	daemons []*Daemon
	closers []func()
}

// startDaemon starts a wharfd that TearDownSuite stops.
func (f *suiteFixture) startDaemon(c *check.C, args ...string) *Daemon {
	d := StartDaemon(c, args...)
	f.daemons = append(f.daemons, d)
	return d
}

// killAtEnd hands TearDownSuite a daemon started otherwise (NewDaemon and
// Start with flags of its own): it is killed, not stopped, at the end.
func (f *suiteFixture) killAtEnd(d *Daemon) {
	f.closeAtEnd(d.Kill)
}

// startRegistry starts a real registry that TearDownSuite closes. It
// fails the suite first when the wharf binaries are missing: a registry
// is no use without them.
func (f *suiteFixture) startRegistry(c *check.C, opts testregistry.Options) *testregistry.Registry {
	needBinaries(c)
	r, err := testregistry.Start(opts)
	c.Assert(err, check.IsNil)
	f.closeAtEnd(r.Close)
	return r
}

// startRegistries starts one registry per auth mode.
func (f *suiteFixture) startRegistries(c *check.C) *registries {
	return &registries{
		anon:  f.startRegistry(c, testregistry.Options{}),
		basic: f.startRegistry(c, testregistry.Options{Auth: testregistry.AuthBasic}),
		token: f.startRegistry(c, testregistry.Options{Auth: testregistry.AuthToken}),
	}
}

// startReferrersRegistry starts an OCI 1.1 registry (referrers API) that
// TearDownSuite closes.
func (f *suiteFixture) startReferrersRegistry(c *check.C) *testregistry.ReferrersRegistry {
	r, err := testregistry.StartReferrersRegistry()
	c.Assert(err, check.IsNil)
	f.closeAtEnd(r.Close)
	return r
}

// closeAtEnd has TearDownSuite call fn, after the daemons have stopped.
func (f *suiteFixture) closeAtEnd(fn func()) {
	f.closers = append(f.closers, fn)
}

func (f *suiteFixture) TearDownSuite(c *check.C) {
	daemons, closers := f.daemons, f.closers
	f.daemons, f.closers = nil, nil
	defer func() {
		for _, d := range daemons {
			d.Kill() // a no-op for those stopped below
		}
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	for _, d := range daemons {
		d.Stop(c)
	}
}

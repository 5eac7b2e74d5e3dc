// Package integration holds wharf's end-to-end suites (gopkg.in/check.v1): they
// build the real wharfd and wharf binaries (or take them from $WHARF_BIN_DIR),
// start wharfd on a temp data-root and unix socket, start real distribution
// registries (internal/testregistry), and drive everything through plain HTTP,
// the wharf CLI, the docker CLI and the Docker Go SDK.
//
// A suite embeds suiteFixture (fixture_test.go) and starts its registries,
// daemons and servers through it; the fixture's TearDownSuite takes them
// down. What only a poll can see is waited for with waitFor (wait_test.go).
//
// Each suite is its own go test (TestRemoteInspectSuite runs
// RemoteInspectSuite), and suites that share nothing run in parallel;
// TestMain searches every wharfd log of the run for secrets at the end.
//
// Run: go test ./integration-cli/ [-run TestRemoteInspectSuite] [-check.f 'TestName'] [-check.v]
package integration

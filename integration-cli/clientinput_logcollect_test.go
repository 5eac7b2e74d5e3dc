package integration

import "testing"

// TestCollectDaemonLogs makes every suite keep its wharfd logs for
// TestZZNoSecretInAnyDaemonLog (security_alllogs_test.go). It must run
// before Test (main_test.go): this file's name sorts before main_test.go.
func TestCollectDaemonLogs(t *testing.T) { startLogCollection(t) }

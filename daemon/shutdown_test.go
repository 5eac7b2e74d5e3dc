package daemon

import (
	"bufio"
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/api/server"
	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph"
	"github.com/wharfproject/wharf/registry"
)

// slowStore is an imageStore whose pull blocks until released; every other
// method is left nil (the test calls none of them).
type slowStore struct {
	server.ImageBackend
	server.RegistryBackend
	storeChecker
	started chan struct{}
	release chan struct{}
}

func (s *slowStore) SetPolicy(graph.Judge)     {}
func (s *slowStore) SetLayerIndexBudget(int64) {}

func (s *slowStore) StartScrub(func(*types.ScrubReport)) {} // a scrub that never ends

func (s *slowStore) PullImage(ctx context.Context, _ types.PullOptions, out types.ProgressWriter) error {
	_ = out.WriteMessage(jsonstream.Message{Status: "Pulling from library/busybox"})
	close(s.started)
	<-s.release
	return out.WriteMessage(jsonstream.Message{Status: "Status: Downloaded newer image"})
}
func (s *slowStore) Count() int { return 0 }
func (s *slowStore) CheckRemoteSkipping(context.Context, types.RemoteCheckOptions, func(string) bool, func(types.RemoteCheckResult) error) error {
	return nil
}
func (s *slowStore) DiskUsage(context.Context) (*types.DiskUsage, error) {
	return &types.DiskUsage{}, nil
}
func (s *slowStore) Close() error { return nil }

// TestShutdownLetsInFlightRequestsFinish: after SIGTERM the daemon stops
// accepting connections but a running pull completes.
func TestShutdownLetsInFlightRequestsFinish(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "w.sock")
	reg, err := registry.NewService(registry.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := &slowStore{started: make(chan struct{}), release: make(chan struct{})}
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	ready := make(chan struct{})
	d := &Daemon{
		images: store, events: NewEvents(), registry: reg,
		cfg:  &Config{Root: t.TempDir(), Hosts: []string{"unix://" + sock}, LogLevel: "info"},
		opts: Options{Version: "t", Ready: func([]string) { close(ready) }},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.serve(ctx, logrus.NewEntry(logger)) }()
	<-ready

	c := unixClient(sock)
	type result struct {
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := c.Post("http://wharf/v1.50/images/create?fromImage=busybox&tag=latest", "", nil)
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(bufio.NewReader(resp.Body))
		res <- result{string(b), err}
	}()
	<-store.started
	cancel()

	// Wait (bounded) until the listener is closed: shutdown has begun.
	closed := false
	for i := 0; i < 1000 && !closed; i++ {
		conn, err := net.DialTimeout("unix", sock, time.Second)
		if err != nil {
			closed = true
			break
		}
		conn.Close()
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
	if !closed {
		t.Fatal("daemon still accepting connections after shutdown began")
	}
	close(store.release)
	r := <-res
	if r.err != nil || !strings.Contains(r.body, "Downloaded newer image") {
		t.Fatalf("in-flight pull: %q %v", r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

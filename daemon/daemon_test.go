package daemon

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

func unixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

// TestDaemonServesAndShutsDown starts wharfd in-process on a temporary socket
// and data-root, pings it, holds an /events stream open, and checks that
// cancelling (SIGTERM) ends the stream, stops the daemon, removes the socket
// and frees the data-root.
func TestDaemonServesAndShutsDown(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "w.sock")
	root := filepath.Join(dir, "root")
	cfg, fs := parseFlags(t, "-H", "unix://"+sock, "--data-root", root, "--config-file", writeConfig(t, `{"log-level":"debug"}`))
	if err := LoadConfig(cfg, fs, rootEnv()); err != nil {
		t.Fatal(err)
	}
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	logged := logtest.NewLocal(logger)
	ready := make(chan []string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Version: "9.9-test", Logger: logger, Ready: func(a []string) { ready <- a }})
	}()
	select {
	case addrs := <-ready:
		if len(addrs) != 1 || !strings.HasSuffix(addrs[0], sock) {
			t.Fatalf("addrs %v", addrs)
		}
	case err := <-done:
		t.Fatalf("daemon exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon not ready")
	}

	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket: %v %v", fi, err)
	}
	c := unixClient(sock)
	resp, err := c.Head("http://wharf/_ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Api-Version") != "1.55" || resp.Header.Get("Server") != "Wharf/9.9-test (linux)" {
		t.Fatalf("ping: %d %v", resp.StatusCode, resp.Header)
	}
	resp, err = c.Get("http://wharf/v1.50/info")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"DockerRootDir":"`+root+`"`) || !strings.Contains(string(b), `"Driver":"oci-layout"`) {
		t.Fatalf("info: %d %s", resp.StatusCode, b)
	}

	// A second daemon on the same data-root is refused.
	cfg2, fs2 := parseFlags(t, "-H", "unix://"+filepath.Join(dir, "w2.sock"), "--data-root", root)
	if err := LoadConfig(cfg2, fs2, userEnv(nil)); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), cfg2, Options{Logger: logger}); err == nil || !strings.Contains(err.Error(), "is in use by another wharfd") {
		t.Fatalf("second daemon: %v", err)
	}

	// An open /events stream must not hold up shutdown.
	resp, err = c.Get("http://wharf/v1.50/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	streamEnded := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(resp.Body))
		close(streamEnded)
	}()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(shutdownTimeout + 5*time.Second):
		t.Fatal("daemon did not stop")
	}
	// Had the stream held the shutdown, it would have run out its timeout
	// and said so.
	for _, e := range logged.AllEntries() {
		if strings.Contains(e.Message, "after the shutdown timeout") {
			t.Errorf("the events stream held the shutdown: %q", e.Message)
		}
	}
	<-streamEnded
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	l, err := lockRoot(root)
	if err != nil {
		t.Fatalf("data-root still locked: %v", err)
	}
	_ = l.unlock()
}

func TestTCPNeedsExplicitInsecureFlag(t *testing.T) {
	_, err := listen([]string{"tcp://127.0.0.1:0"}, nil, false, logrus.NewEntry(logrus.New()))
	if err == nil || !strings.Contains(err.Error(), "--allow-insecure-tcp") {
		t.Fatalf("err %v", err)
	}
	ls, err := listen([]string{"tcp://127.0.0.1:0"}, nil, true, logrus.NewEntry(logrus.New()))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		closeListener(l)
	}
}

func TestStaleSocketIsReplacedLiveOneRefused(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	log := logrus.NewEntry(logrus.New())
	ls, err := listen([]string{"unix://" + sock}, nil, false, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := listen([]string{"unix://" + sock}, nil, false, log); err == nil {
		t.Error("a live socket must not be taken over")
	}
	// Close without removing: a stale socket file stays, as after a crash.
	ul := ls[0].Listener.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	ul.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}
	ls, err = listen([]string{"unix://" + sock}, nil, false, log)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	closeListener(ls[0])
}

func TestFDWithoutSystemdIsAClearError(t *testing.T) {
	t.Setenv("LISTEN_PID", "")
	t.Setenv("LISTEN_FDS", "")
	_, err := listen([]string{"fd://"}, nil, false, logrus.NewEntry(logrus.New()))
	if err == nil || !strings.Contains(err.Error(), "no sockets passed by systemd") {
		t.Fatalf("err %v", err)
	}
}

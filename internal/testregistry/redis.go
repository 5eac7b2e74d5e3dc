package testregistry

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrNoRedis is StartRedis's answer when no redis-server binary is on PATH.
var ErrNoRedis = errors.New("redis-server not found on PATH (Debian package redis-server)")

// Redis is a redis-server on a free loopback port, without persistence,
// for a registry's blob-descriptor cache.
type Redis struct {
	Addr string // 127.0.0.1:port
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts redis-server in dir (its log goes to dir/redis.log)
// and waits until it answers PING. ErrNoRedis when the binary is absent.
func StartRedis(dir string) (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoRedis
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		r := &Redis{Addr: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan struct{})}
		logf, err := os.OpenFile(filepath.Join(dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		r.cmd = exec.Command(bin, "--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "yes")
		r.cmd.Stdout, r.cmd.Stderr = logf, logf
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		err = r.cmd.Start()
		logf.Close()
		if err != nil {
			return nil, fmt.Errorf("testregistry: start redis-server: %w", err)
		}
		go func() { _ = r.cmd.Wait(); close(r.done) }()
		if lastErr = r.waitPing(); lastErr == nil {
			return r, nil
		}
		r.Close()
	}
	return nil, lastErr
}

// waitPing polls PING until PONG, the process exits, or readyTimeout.
func (r *Redis) waitPing() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for {
		if err := r.ping(ctx); err == nil {
			return nil
		}
		select {
		case <-r.done:
			return fmt.Errorf("testregistry: redis-server on %s exited", r.Addr)
		case <-ctx.Done():
			return fmt.Errorf("testregistry: redis-server on %s did not answer PING", r.Addr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *Redis) ping(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", r.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("redis answered %q", line)
	}
	return nil
}

// Keys is the number of keys redis holds (DBSIZE): a registry that uses
// it as its cache has written some.
func (r *Redis) Keys() (int, error) {
	conn, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("DBSIZE\r\n")); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return 0, err
	}
	var n int
	if _, err := fmt.Sscanf(line, ":%d", &n); err != nil {
		return 0, fmt.Errorf("redis answered %q", line)
	}
	return n, nil
}

// Close stops redis-server.
func (r *Redis) Close() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

package daemon

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/sirupsen/logrus"

	"github.com/wharfproject/wharf/internal/privdir"
)

// Host is one parsed API listen address.
type Host struct {
	Proto string // unix, tcp or fd
	Addr  string // socket path, host:port, or the fd name ("" = all)
}

func (h Host) String() string { return h.Proto + "://" + h.Addr }

// ParseHost parses unix://PATH, tcp://HOST:PORT and fd://[NAME].
func ParseHost(s string) (Host, error) {
	proto, addr, ok := strings.Cut(s, "://")
	if !ok {
		return Host{}, fmt.Errorf("%q: missing scheme (unix://, tcp:// or fd://)", s)
	}
	switch proto {
	case "unix":
		if !filepath.IsAbs(addr) {
			return Host{}, fmt.Errorf("%q: unix socket path must be absolute", s)
		}
		return Host{Proto: proto, Addr: filepath.Clean(addr)}, nil
	case "tcp":
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return Host{}, fmt.Errorf("%q: want tcp://HOST:PORT", s)
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			return Host{}, fmt.Errorf("%q: %v", s, err)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return Host{}, fmt.Errorf("%q: bad port %q", s, port)
		}
		return Host{Proto: proto, Addr: net.JoinHostPort(host, port)}, nil
	case "fd":
		return Host{Proto: proto, Addr: addr}, nil
	}
	return Host{}, fmt.Errorf("%q: unsupported scheme %q (unix, tcp or fd)", s, proto)
}

// socketGroup owns the unix sockets when it exists, as the docker group does
// for dockerd.
const socketGroup = "wharf"

// listener is a bound API listener and how to clean up after it.
type listener struct {
	net.Listener
	host Host
	// socketPath is removed at shutdown (unix sockets wharfd created).
	socketPath string
}

// listen binds every host. tcp:// needs TLS with client verification
// (tlsCfg non-nil) or allowInsecureTCP.
func listen(hosts []string, tlsCfg *tls.Config, allowInsecureTCP bool, log *logrus.Entry) ([]listener, error) {
	var out []listener
	fail := func(err error) ([]listener, error) {
		for _, l := range out {
			closeListener(l)
		}
		return nil, err
	}
	for _, s := range hosts {
		h, err := ParseHost(s)
		if err != nil {
			return fail(err)
		}
		switch h.Proto {
		case "unix":
			l, err := listenUnix(h.Addr, log)
			if err != nil {
				return fail(err)
			}
			out = append(out, listener{Listener: l, host: h, socketPath: h.Addr})
		case "tcp":
			if tlsCfg == nil && !allowInsecureTCP {
				return fail(fmt.Errorf("refusing to listen on %s: the API would be open to the network without TLS; use --tlsverify --tlscacert --tlscert --tlskey, or pass --allow-insecure-tcp to do it anyway", s))
			}
			l, err := net.Listen("tcp", h.Addr)
			if err != nil {
				return fail(fmt.Errorf("listen %s: %w", s, err))
			}
			if tlsCfg != nil {
				log.Infof("%s: TLS, client certificates required", s)
				l = tls.NewListener(l, tlsCfg)
			} else {
				log.Warnf("!!! INSECURE: listening on %s without TLS or authentication: anyone who can reach it controls this daemon's images and registry credentials !!!", s)
			}
			out = append(out, listener{Listener: l, host: h})
		case "fd":
			ls, err := listenFD(h.Addr)
			if err != nil {
				return fail(err)
			}
			for _, l := range ls {
				out = append(out, listener{Listener: l, host: h})
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no API listener configured")
	}
	return out, nil
}

// listenUnix binds path with mode 0660 and group wharf (when it exists), in a
// directory only this user (or root) controls. A
// stale socket (nobody answering) is removed first; a live one is an error.
func listenUnix(path string, log *logrus.Entry) (net.Listener, error) {
	// A directory another user owns or may write to lets them swap the
	// socket for theirs (internal/privdir): refuse to listen there.
	if err := privdir.Prepare(filepath.Dir(path), os.Geteuid()); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use by another daemon", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket: %w", err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen unix://%s: %w", path, err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		l.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	if g, err := user.LookupGroup(socketGroup); err == nil {
		gid, _ := strconv.Atoi(g.Gid)
		if err := os.Chown(path, -1, gid); err != nil {
			log.WithError(err).Warnf("could not give %s to group %s", path, socketGroup)
		}
	} else {
		log.Debugf("group %s not found: %s stays with the daemon's group", socketGroup, path)
	}
	return l, nil
}

// listenFD returns the sockets systemd passed (fd:// = all of them, fd://NAME
// = those named NAME by FileDescriptorName=).
func listenFD(name string) ([]net.Listener, error) {
	if name == "" {
		ls, err := activation.Listeners()
		if err != nil {
			return nil, fmt.Errorf("fd://: %w", err)
		}
		var out []net.Listener
		for _, l := range ls {
			if l != nil {
				out = append(out, l)
			}
		}
		if len(out) == 0 {
			return nil, errors.New("fd://: no sockets passed by systemd (is wharf.socket enabled?)")
		}
		return out, nil
	}
	byName, err := activation.ListenersWithNames()
	if err != nil {
		return nil, fmt.Errorf("fd://%s: %w", name, err)
	}
	if len(byName[name]) == 0 {
		return nil, fmt.Errorf("fd://%s: no such socket passed by systemd", name)
	}
	return byName[name], nil
}

func closeListener(l listener) {
	_ = l.Close()
	if l.socketPath != "" {
		_ = os.Remove(l.socketPath)
	}
}

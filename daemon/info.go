package daemon

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/api/types/system"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/wharfproject/wharf/api/types"
)

// storageDriver names what /info reports as Driver: the images live in an
// OCI image layout, not in a graph driver.
const storageDriver = "oci-layout"

// SystemInfo implements server.SystemBackend.
func (d *Daemon) SystemInfo(ctx context.Context) (*system.Info, error) {
	hostname, _ := os.Hostname()
	kernel := kernelVersion()
	osName, osVersion := operatingSystem()
	info := &system.Info{
		ID:                 d.id,
		Images:             d.storeCount(),
		Driver:             storageDriver,
		DriverStatus:       [][2]string{{"Root Dir", d.cfg.Root}},
		Plugins:            system.PluginsInfo{Volume: []string{}, Network: []string{}, Authorization: []string{}, Log: []string{}},
		Debug:              d.opts.Logger.IsLevelEnabled(logrus.DebugLevel), // the level now: SIGHUP may have changed it
		NFd:                countFDs(),
		NGoroutines:        runtime.NumGoroutine(),
		SystemTime:         time.Now().Format(time.RFC3339Nano),
		LoggingDriver:      "none",
		NEventsListener:    d.events.Subscribers(),
		KernelVersion:      kernel,
		OperatingSystem:    osName,
		OSVersion:          osVersion,
		OSType:             runtime.GOOS,
		Architecture:       machineArch(),
		IndexServerAddress: "https://index.docker.io/v1/",
		RegistryConfig:     d.registry.ServiceConfig(),
		NCPU:               runtime.NumCPU(),
		MemTotal:           memTotal(),
		DockerRootDir:      d.cfg.Root,
		HTTPProxy:          os.Getenv("HTTP_PROXY"),
		HTTPSProxy:         os.Getenv("HTTPS_PROXY"),
		NoProxy:            os.Getenv("NO_PROXY"),
		Name:               hostname,
		Labels:             []string{},
		ServerVersion:      d.opts.Version,
		Swarm:              swarm.Info{LocalNodeState: swarm.LocalNodeStateInactive},
		SecurityOptions:    []string{},
		Warnings:           d.allWarnings(),
	}
	// Proxy URLs may carry credentials (http://user:pass@proxy): never show them.
	info.HTTPProxy, info.HTTPSProxy = maskCredentials(info.HTTPProxy), maskCredentials(info.HTTPSProxy)
	return info, nil
}

// SystemVersion implements server.SystemBackend.
func (d *Daemon) SystemVersion(ctx context.Context) system.VersionResponse {
	kernel := kernelVersion()
	details := map[string]string{
		"ApiVersion":    types.DefaultAPIVersion,
		"MinAPIVersion": d.cfg.MinAPIVersion,
		"GitCommit":     d.opts.GitCommit,
		"GoVersion":     runtime.Version(),
		"Os":            runtime.GOOS,
		"Arch":          runtime.GOARCH,
		"KernelVersion": kernel,
		"Experimental":  "false",
		"BuildTime":     d.opts.BuildTime,
	}
	return system.VersionResponse{
		Platform:      system.PlatformInfo{Name: "Wharf Engine"},
		Components:    []system.ComponentVersion{{Name: "Engine", Version: d.opts.Version, Details: details}},
		Version:       d.opts.Version,
		APIVersion:    types.DefaultAPIVersion,
		MinAPIVersion: d.cfg.MinAPIVersion,
		GitCommit:     d.opts.GitCommit,
		GoVersion:     runtime.Version(),
		Os:            runtime.GOOS,
		Arch:          runtime.GOARCH,
		KernelVersion: kernel,
		BuildTime:     d.opts.BuildTime,
	}
}

// SystemDiskUsage implements server.SystemBackend.
func (d *Daemon) SystemDiskUsage(ctx context.Context) (*types.DiskUsage, error) {
	du, err := d.images.DiskUsage(ctx)
	if err != nil {
		return nil, err
	}
	if du.Containers == nil {
		du.Containers = []struct{}{}
	}
	if du.Volumes == nil {
		du.Volumes = []struct{}{}
	}
	if du.BuildCache == nil {
		du.BuildCache = []struct{}{}
	}
	return du, nil
}

func maskCredentials(s string) string {
	at := strings.LastIndex(s, "@")
	scheme := strings.Index(s, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return s
	}
	return s[:scheme+3] + "xxxxx:xxxxx" + s[at:]
}

func kernelVersion() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// machineArch is uname -m (x86_64, aarch64), as dockerd reports it.
func machineArch() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return runtime.GOARCH
	}
	return unix.ByteSliceToString(u.Machine[:])
}

func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

func memTotal() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// operatingSystem reads PRETTY_NAME and VERSION_ID from os-release.
func operatingSystem() (name, version string) {
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		f, err := os.Open(filepath.Clean(p))
		if err != nil {
			continue
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), "=")
			if !ok {
				continue
			}
			if uv, err := strconv.Unquote(v); err == nil {
				v = uv
			}
			switch k {
			case "PRETTY_NAME":
				name = v
			case "VERSION_ID":
				version = v
			}
		}
		return name, version
	}
	return "", ""
}

// allWarnings are the daemon's warnings and the last scrub's.
func (d *Daemon) allWarnings() []string {
	sw := d.scrubWarnings.Load()
	if sw == nil || len(*sw) == 0 {
		return d.warnings
	}
	return append(append([]string{}, d.warnings...), *sw...)
}

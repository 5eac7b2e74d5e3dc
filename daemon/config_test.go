package daemon

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func parseFlags(t *testing.T, args ...string) (*Config, *pflag.FlagSet) {
	t.Helper()
	cfg := &Config{}
	fs := pflag.NewFlagSet("wharfd", pflag.ContinueOnError)
	InstallFlags(fs, cfg)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return cfg, fs
}

func rootEnv() Env { return Env{EUID: 0, Getenv: func(string) string { return "" }, Home: "/root"} }

func userEnv(vars map[string]string) Env {
	return Env{EUID: 1000, Getenv: func(k string) string { return vars[k] }, Home: "/home/u"}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "daemon.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfigFile(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		flags   []string
		wantErr string // substring; "" = success
		check   func(t *testing.T, c *Config)
	}{
		{name: "all keys", file: `{"data-root":"/srv/wharf","hosts":["unix:///tmp/w.sock"],"debug":true,"log-level":"warn",
			"insecure-registries":["r:5000"],"registry-mirrors":["https://m"],"add-registry":["quay.io"],"block-registry":["all"],"max-concurrent-downloads":5}`,
			check: func(t *testing.T, c *Config) {
				if c.Root != "/srv/wharf" || c.Hosts[0] != "unix:///tmp/w.sock" || !c.Debug || c.LogLevel != "warn" ||
					c.InsecureRegistries[0] != "r:5000" || c.RegistryMirrors[0] != "https://m" || c.AddRegistries[0] != "quay.io" ||
					c.BlockRegistries[0] != "all" || c.MaxConcurrentDownloads != 5 {
					t.Errorf("%+v", c)
				}
			}},
		{name: "unknown key", file: `{"data-root":"/x","storage-driver":"overlay2","bogus":1}`,
			wantErr: "the following directives don't match any configuration option: bogus, storage-driver"},
		{name: "bad value type", file: `{"max-concurrent-downloads":"many"}`, wantErr: `invalid value for "max-concurrent-downloads"`},
		{name: "bad log level", file: `{"log-level":"loud"}`, wantErr: `invalid value for "log-level"`},
		{name: "relative data-root", file: `{"data-root":"rel"}`, wantErr: `invalid value for "data-root"`},
		{name: "bad host", file: `{"hosts":["ftp://x"]}`, wantErr: `invalid value for "hosts"`},
		{name: "invalid JSON", file: `{"debug":`, wantErr: "invalid JSON"},
		{name: "a stray closing brace", file: "{\"debug\": true}\n}\n", wantErr: "invalid JSON: data after the end of the object at byte 16"},
		{name: "a stray closing bracket", file: `{}]`, wantErr: "invalid JSON: data after the end of the object at byte 2"},
		{name: "two objects", file: `{} {}`, wantErr: "invalid JSON: more than one document"},
		{name: "trailing white space", file: "{\"debug\": true}\n\t \n", check: func(t *testing.T, c *Config) {
			if !c.Debug {
				t.Errorf("%+v", c)
			}
		}},
		{name: "min-api-version", file: `{"min-api-version":"1.24"}`,
			check: func(t *testing.T, c *Config) {
				if c.MinAPIVersion != "1.24" {
					t.Errorf("MinAPIVersion %q", c.MinAPIVersion)
				}
			}},
		{name: "min-api-version below the floor", file: `{"min-api-version":"1.11"}`,
			wantErr: `invalid value for "min-api-version": minimum supported API version is 1.12: 1.11`},
		{name: "min-api-version above the maximum", file: `{"min-api-version":"1.56"}`,
			wantErr: `invalid value for "min-api-version": maximum supported API version is 1.55: 1.56`},
		{name: "min-api-version with v", file: `{"min-api-version":"v1.24"}`, wantErr: `without "v" prefix`},
		{name: "min-api-version not a version", file: `{"min-api-version":"1.2x"}`, wantErr: `"1.2x" is not an API version`},
		{name: "min-api-version flag", flags: []string{"--min-api-version", "1.40"}, file: `{}`,
			check: func(t *testing.T, c *Config) {
				if c.MinAPIVersion != "1.40" {
					t.Errorf("MinAPIVersion %q", c.MinAPIVersion)
				}
			}},
		{name: "duplicate key, valid value last", file: "{\"max-concurrent-downloads\": -5,\n\"max-concurrent-downloads\": 2}",
			wantErr: `duplicate key "max-concurrent-downloads" on line 1 and line 2`},
		{name: "duplicate key, valid value first", file: "{\"max-concurrent-downloads\": 2,\n\"max-concurrent-downloads\": -5}",
			wantErr: `duplicate key "max-concurrent-downloads" on line 1 and line 2`},
		{name: "duplicate key with the same value", file: `{"debug": true, "debug": true}`, wantErr: `duplicate key "debug"`},
		{name: "duplicate key inside a value", file: `{"hosts": [{"a": 1, "a": 2}]}`, wantErr: `duplicate key "hosts.a"`},
		{name: "same key in sibling objects", file: `{"hosts": [{"a": 1}, {"a": 2}]}`, wantErr: `invalid value for "hosts"`},
		{name: "flag and file", file: `{"data-root":"/a","registry-mirrors":["https://m"]}`, flags: []string{"--data-root", "/b", "--registry-mirror", "https://n"},
			wantErr: "the following directives are specified both as a flag and in the configuration file: data-root: (from flag: /b, from file: \"/a\"), registry-mirrors: (from flag: [https://n], from file: [\"https://m\"])"},
		{name: "flags and file on different keys", file: `{"data-root":"/a"}`, flags: []string{"-D", "-H", "unix:///tmp/x.sock"},
			check: func(t *testing.T, c *Config) {
				if c.Root != "/a" || !c.Debug || c.Hosts[0] != "unix:///tmp/x.sock" {
					t.Errorf("%+v", c)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.file)
			cfg, fs := parseFlags(t, append([]string{"--config-file", path}, tc.flags...)...)
			err := LoadConfig(cfg, fs, rootEnv())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg)
		})
	}
}

// The registry timeout and certs dirs are daemon settings (flag and
// daemon.json key, refused when given both ways); the old environment
// variable is no longer read, and saying so is a warning.
func TestRegistryTimeoutAndCertsDirs(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		flags      []string
		env        map[string]string
		wantErr    string
		timeout    time.Duration
		certs      []string
		warnings   int
	}{
		{name: "default", file: `{}`},
		{name: "flag", file: `{}`, flags: []string{"--registry-timeout", "2s", "--registry-certs-dir", "/c1", "--registry-certs-dir", "/c2"}, timeout: 2 * time.Second, certs: []string{"/c1", "/c2"}},
		{name: "file", file: `{"registry-timeout":"1m30s","registry-certs-dirs":["/c"]}`, timeout: 90 * time.Second, certs: []string{"/c"}},
		{name: "both", file: `{"registry-timeout":"5s"}`, flags: []string{"--registry-timeout", "2s"},
			wantErr: `specified both as a flag and in the configuration file: registry-timeout: (from flag: 2s, from file: "5s")`},
		{name: "number in file", file: `{"registry-timeout":30}`, wantErr: `invalid value for "registry-timeout": 30: want a duration string`},
		{name: "garbage in file", file: `{"registry-timeout":"soon"}`, wantErr: `invalid value for "registry-timeout"`},
		{name: "negative", file: `{"registry-timeout":"-1s"}`, wantErr: `invalid value for "registry-timeout": -1s: must not be negative`},
		{name: "relative certs dir", file: `{"registry-certs-dirs":["certs"]}`, wantErr: `invalid value for "registry-certs-dirs": "certs" is not an absolute path`},
		{name: "old env var", file: `{}`, env: map[string]string{"WHARF_REGISTRY_TIMEOUT": "2s"}, warnings: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, fs := parseFlags(t, append([]string{"--config-file", writeConfig(t, tc.file)}, tc.flags...)...)
			env := rootEnv()
			env.Getenv = func(k string) string { return tc.env[k] }
			err := LoadConfig(cfg, fs, env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.RegistryTimeout != tc.timeout || strings.Join(cfg.RegistryCertsDirs, ",") != strings.Join(tc.certs, ",") {
				t.Errorf("timeout %s certs %v", cfg.RegistryTimeout, cfg.RegistryCertsDirs)
			}
			if len(cfg.warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", cfg.warnings, tc.warnings)
			}
			for _, w := range cfg.warnings {
				if !strings.Contains(w, "--registry-timeout") {
					t.Errorf("warning %q does not name the flag", w)
				}
			}
		})
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	cfg, fs := parseFlags(t, "--config-file", "/nonexistent/daemon.json")
	if err := LoadConfig(cfg, fs, rootEnv()); err == nil {
		t.Error("an explicit missing config file must be an error")
	}
	// The default file is optional.
	cfg, fs = parseFlags(t)
	env := userEnv(map[string]string{"XDG_CONFIG_HOME": t.TempDir()})
	if err := LoadConfig(cfg, fs, env); err != nil {
		t.Errorf("missing default config file: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name       string
		env        Env
		root, sock string
	}{
		{"root", rootEnv(), "/var/lib/wharf", "unix:///run/wharf/wharf.sock"},
		{"user with XDG", userEnv(map[string]string{"XDG_DATA_HOME": "/d", "XDG_RUNTIME_DIR": "/run/user/1000"}),
			"/d/wharf", "unix:///run/user/1000/wharf/wharf.sock"},
		{"user without XDG", userEnv(nil), "/home/u/.local/share/wharf", "unix://" + filepath.Join(os.TempDir(), "wharf-1000", "wharf.sock")},
		{"user with relative XDG", userEnv(map[string]string{"XDG_DATA_HOME": "rel"}), "/home/u/.local/share/wharf", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, fs := parseFlags(t, "--config-file", writeConfig(t, `{}`))
			if err := LoadConfig(cfg, fs, tc.env); err != nil {
				t.Fatal(err)
			}
			if cfg.Root != tc.root || (tc.sock != "" && cfg.Hosts[0] != tc.sock) {
				t.Errorf("root %q hosts %v", cfg.Root, cfg.Hosts)
			}
			if cfg.LogLevel != "info" || cfg.MaxConcurrentDownloads != 3 || cfg.MinAPIVersion != "1.12" {
				t.Errorf("defaults: %+v", cfg)
			}
		})
	}
}

func TestParseHost(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"unix:///run/wharf/wharf.sock", "unix:///run/wharf/wharf.sock", true},
		{"unix://rel.sock", "", false},
		{"tcp://127.0.0.1:2375", "tcp://127.0.0.1:2375", true},
		{"tcp://[::1]:2375", "tcp://[::1]:2375", true},
		{"tcp://127.0.0.1", "", false},
		{"tcp://h:99999", "", false},
		{"fd://", "fd://", true},
		{"fd://wharf", "fd://wharf", true},
		{"/run/x.sock", "", false},
		{"http://x", "", false},
	}
	for _, tc := range tests {
		h, err := ParseHost(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v", tc.in, err)
			continue
		}
		if tc.ok && h.String() != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, h, tc.want)
		}
	}
}

// FuzzParseListenHost reads -H values (client's FuzzParseHost reads the
// client side's). Accepted: the scheme given, a clean absolute socket path
// or a host and a port in range; refused: the error quotes the value.
func FuzzParseListenHost(f *testing.F) {
	for _, s := range []string{"unix:///a", "tcp://1.2.3.4:5", "fd://", "tcp://[::1]:1", "x://", "unix://rel", "tcp://h:99999", "unix:///a/../b//c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHost(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("ParseHost(%q): %v, which does not quote the value", s, err)
			}
			return
		}
		if !strings.HasPrefix(s, h.Proto+"://") {
			t.Fatalf("ParseHost(%q) = %+v: not the scheme given", s, h)
		}
		switch h.Proto {
		case "unix":
			if !filepath.IsAbs(h.Addr) || filepath.Clean(h.Addr) != h.Addr {
				t.Fatalf("ParseHost(%q) = %+v: not a clean absolute path", s, h)
			}
		case "tcp":
			_, port, err := net.SplitHostPort(h.Addr)
			if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 0 || p > 65535 {
				t.Fatalf("ParseHost(%q) = %+v: not a host and a port", s, h)
			}
		case "fd":
		default:
			t.Fatalf("ParseHost(%q) = %+v: unknown scheme accepted", s, h)
		}
	})
}

func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{`{}`, `{"debug":true}`, `{"hosts":"x"}`, `[]`, `{"a":1}`} {
		f.Add(s)
	}
	// Properties of every input: a refused file changes nothing of the
	// configuration (all or nothing); an accepted one is JSON whose every
	// key is a known directive, and reading it again gives the same
	// configuration.
	f.Fuzz(func(t *testing.T, s string) {
		merge := func() (*Config, error) {
			cfg := &Config{}
			fs := pflag.NewFlagSet("f", pflag.ContinueOnError)
			InstallFlags(fs, cfg)
			return cfg, mergeConfigFile(cfg, fs, []byte(s))
		}
		defaults := &Config{}
		InstallFlags(pflag.NewFlagSet("d", pflag.ContinueOnError), defaults)
		cfg, err := merge()
		if err != nil {
			if !reflect.DeepEqual(cfg, defaults) {
				t.Fatalf("refused %q (%v) but changed the configuration:\n%+v\nfrom\n%+v", s, err, cfg, defaults)
			}
			return
		}
		var raw map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &raw) != nil {
			t.Fatalf("accepted %q, which is not one JSON object", s)
		}
		known := map[string]bool{}
		for _, k := range fileKeyOfFlag {
			known[k] = true
		}
		for k := range raw {
			if !known[k] {
				t.Fatalf("accepted %q with the unknown directive %q", s, k)
			}
		}
		again, err := merge()
		if err != nil || !reflect.DeepEqual(cfg, again) {
			t.Fatalf("%q read twice: %+v, then %+v (%v)", s, cfg, again, err)
		}
	})
}

// Errors about settings that name registries never repeat credentials
// written into them (a mirror given as https://user:password@host).
func TestConfigErrorsRedactRegistryCredentials(t *testing.T) {
	for _, tc := range []struct {
		file  string
		flags []string
	}{
		{file: `{"registry-mirrors":"https://leaky:S3CRET@m.example"}`},
		{file: `{"registry-mirrors":["https://leaky:S3CRET@m.example"]}`, flags: []string{"--registry-mirror", "https://leaky:S3CRET@n.example"}},
		{file: `{"insecure-registries":["http://leaky:S3CRET@r.example x"]}`},
		{file: `{"add-registry":["leaky:S3CRET@r.example x"]}`},
	} {
		cfg, fs := parseFlags(t, append([]string{"--config-file", writeConfig(t, tc.file)}, tc.flags...)...)
		err := LoadConfig(cfg, fs, rootEnv())
		if err == nil {
			t.Errorf("%s %v accepted", tc.file, tc.flags)
			continue
		}
		if low := strings.ToLower(err.Error()); strings.Contains(low, "s3cret") || strings.Contains(low, "leaky") {
			t.Errorf("error repeats the credentials: %v", err)
		}
	}
}

// TestCheckRemoteInterval: "check-remote-interval" (flag and daemon.json,
// a Go duration) is off by default, at least 1 s, and a warning under 1
// minute (meant for tests).
func TestCheckRemoteInterval(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		flags      []string
		want       time.Duration
		warnings   int
		wantErr    string
	}{
		{name: "default off", file: `{}`},
		{name: "file", file: `{"check-remote-interval":"6h"}`, want: 6 * time.Hour},
		{name: "flag", file: `{}`, flags: []string{"--check-remote-interval", "30m"}, want: 30 * time.Minute},
		{name: "short is a warning", file: `{"check-remote-interval":"1s"}`, want: time.Second, warnings: 1},
		{name: "zero is off", file: `{"check-remote-interval":"0s"}`},
		{name: "under the floor", file: `{"check-remote-interval":"500ms"}`, wantErr: `invalid value for "check-remote-interval": 500ms: must be 0 (off) or at least 1s`},
		{name: "negative", flags: []string{"--check-remote-interval", "-1m"}, file: `{}`, wantErr: `invalid value for "check-remote-interval": -1m0s`},
		{name: "number in file", file: `{"check-remote-interval":60}`, wantErr: `invalid value for "check-remote-interval": 60: want a duration string`},
		{name: "both", file: `{"check-remote-interval":"1h"}`, flags: []string{"--check-remote-interval", "2h"}, wantErr: `specified both as a flag and in the configuration file: check-remote-interval`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, fs := parseFlags(t, append([]string{"--config-file", writeConfig(t, tc.file)}, tc.flags...)...)
			err := LoadConfig(cfg, fs, rootEnv())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CheckRemoteInterval != tc.want || len(cfg.warnings) != tc.warnings {
				t.Fatalf("interval %s warnings %q, want %s and %d", cfg.CheckRemoteInterval, cfg.warnings, tc.want, tc.warnings)
			}
		})
	}
}

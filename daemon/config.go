package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/registry"
)

// Config is wharfd's configuration: daemon.json keys, overridden by flags.
type Config struct {
	// Root is the data-root: the OCI image layout and the daemon's state.
	Root string `json:"data-root"`
	// Hosts are the API listeners: unix://PATH, tcp://HOST:PORT, fd://.
	Hosts []string `json:"hosts"`
	Debug bool     `json:"debug"`
	// LogLevel is a logrus level: debug, info, warn, error, fatal.
	LogLevel               string   `json:"log-level"`
	InsecureRegistries     []string `json:"insecure-registries"`
	RegistryMirrors        []string `json:"registry-mirrors"`
	AddRegistries          []string `json:"add-registry"`
	BlockRegistries        []string `json:"block-registry"`
	MaxConcurrentDownloads int      `json:"max-concurrent-downloads"`
	// RegistryTimeout, when not 0, replaces the registry response-header
	// timeout and slow-body window (30 s each) and caps the dial and TLS
	// handshake timeouts (10 s). In daemon.json a Go duration string ("45s").
	RegistryTimeout time.Duration `json:"registry-timeout"`
	// CertsDirs hold, per registry, <host[:port]>/hosts.toml (mirrors, in
	// containerd's format) and {*.crt,client.cert,client.key}, searched in
	// order; empty = /etc/wharf/certs.d, then /etc/docker/certs.d
	// ($XDG_CONFIG_HOME/wharf/certs.d first when not root).
	CertsDirs []string `json:"certs-dirs"`
	// RegistryCertsDirs is the older name of CertsDirs (--registry-certs-dir,
	// "registry-certs-dirs"), kept as an alias: its dirs are searched after
	// CertsDirs.
	RegistryCertsDirs []string `json:"registry-certs-dirs"`
	// TLS for tcp:// hosts (dockerd's keys): the server certificate and
	// key, and the CA that signs the client certificates it accepts.
	TLSVerify bool   `json:"tlsverify"`
	TLSCACert string `json:"tlscacert"`
	TLSCert   string `json:"tlscert"`
	TLSKey    string `json:"tlskey"`
	// MinAPIVersion is the lowest API version the API accepts (dockerd's
	// "min-api-version"); default types.DefaultMinAPIVersion.
	MinAPIVersion string `json:"min-api-version"`
	// MetricsAddr is where Prometheus metrics are served (HOST:PORT,
	// dockerd's "metrics-addr"); empty = off (metrics.go).
	MetricsAddr string `json:"metrics-addr"`
	// SignaturePolicy is the containers-policy.json(5) file that decides
	// which images inspect reports trusted and pull and copy accept
	// (trust.go); empty = /etc/wharf/policy.json when it exists.
	SignaturePolicy string `json:"signature-policy"`
	// CheckRemoteInterval, when not 0, runs the update check of every
	// local tag that often and reports changes as events and gauges
	// (watch.go); a SIGHUP changes it. In daemon.json a Go duration
	// string ("6h"). At least 1 s; under 1 minute is for tests (a warning).
	CheckRemoteInterval time.Duration `json:"check-remote-interval"`
	// CheckRemoteAuthFile is a docker-style config.json (auths,
	// credHelpers, credsStore) whose credentials the watch's rounds
	// present, each only to the registry it is listed for (authfile.go);
	// empty = the watch asks anonymously. Read at start and on SIGHUP;
	// API requests never use it. An absolute path.
	CheckRemoteAuthFile string `json:"check-remote-auth-file"`
	// LayerIndexBudget is the disk the layer indexes of ls, cat and cp may
	// use, least recently used evicted first (layerindex.go); 0 = the
	// default. In daemon.json bytes, or a size string ("2GiB").
	LayerIndexBudget int64 `json:"layer-index-budget"`

	// Flag-only settings.

	// ConfigFile is the daemon.json that was read ("" = none).
	ConfigFile string `json:"-"`
	// AllowInsecureTCP permits tcp:// hosts without TLS: anyone who can reach
	// the port can pull, push with the daemon's network position, and delete
	// images. Off unless asked for explicitly.
	AllowInsecureTCP bool `json:"-"`

	// watchAuth is CheckRemoteAuthFile as LoadConfig read it (nil: none).
	watchAuth *authFile

	// warnings found while loading (deprecated settings); /info shows them.
	warnings []string
}

// registryTimeoutEnv was the registry timeout before --registry-timeout.
// It is no longer read: a daemon setting belongs in the flags and
// daemon.json, where /info and the config conflict checks see it. A
// daemon started with it set says so (log and /info warnings).
const registryTimeoutEnv = "WHARF_REGISTRY_TIMEOUT"

// maxConfigFile caps daemon.json (1 MiB): it is a short hand-written file.
const maxConfigFile = 1 << 20

// fileKeyOfFlag maps flag names to their daemon.json keys where they differ
// (repeatable flags are singular, their keys plural, as in dockerd).
var fileKeyOfFlag = map[string]string{
	"data-root":                "data-root",
	"host":                     "hosts",
	"debug":                    "debug",
	"log-level":                "log-level",
	"insecure-registry":        "insecure-registries",
	"registry-mirror":          "registry-mirrors",
	"add-registry":             "add-registry",
	"block-registry":           "block-registry",
	"max-concurrent-downloads": "max-concurrent-downloads",
	"registry-timeout":         "registry-timeout",
	"registry-certs-dir":       "registry-certs-dirs",
	"certs-dir":                "certs-dirs",
	"tlsverify":                "tlsverify",
	"tlscacert":                "tlscacert",
	"tlscert":                  "tlscert",
	"tlskey":                   "tlskey",
	"min-api-version":          "min-api-version",
	"metrics-addr":             "metrics-addr",
	"signature-policy":         "signature-policy",
	"check-remote-interval":    "check-remote-interval",
	"check-remote-auth-file":   "check-remote-auth-file",
	"layer-index-budget":       "layer-index-budget",
}

// InstallFlags defines wharfd's flags on fs, bound to cfg.
func InstallFlags(fs *pflag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.Root, "data-root", "", "Root directory of persistent wharf state (default /var/lib/wharf, or $XDG_DATA_HOME/wharf when not root)")
	fs.StringArrayVarP(&cfg.Hosts, "host", "H", nil, "Daemon socket(s) to listen on: unix://PATH, fd://, tcp://HOST:PORT (needs --tlsverify, or --allow-insecure-tcp)")
	fs.BoolVarP(&cfg.Debug, "debug", "D", false, "Enable debug mode")
	fs.StringVarP(&cfg.LogLevel, "log-level", "l", "", `Set the logging level ("debug"|"info"|"warn"|"error"|"fatal") (default "info")`)
	fs.StringArrayVar(&cfg.InsecureRegistries, "insecure-registry", nil, "Registry (host[:port] or CIDR) to talk to over plain HTTP or unverified TLS")
	fs.StringArrayVar(&cfg.RegistryMirrors, "registry-mirror", nil, "Preferred registry mirror for docker.io")
	fs.StringArrayVar(&cfg.AddRegistries, "add-registry", nil, "Registry to search, in order, before docker.io for short names")
	fs.StringArrayVar(&cfg.BlockRegistries, "block-registry", nil, `Registry to refuse ("all" blocks every registry not added with --add-registry)`)
	fs.IntVar(&cfg.MaxConcurrentDownloads, "max-concurrent-downloads", 0, "Maximum concurrent layer downloads per pull (default 3)")
	fs.DurationVar(&cfg.RegistryTimeout, "registry-timeout", 0, "Registry response-header timeout and slow-body window: a response body must move 1 KiB, and an upload make progress, in every window (default 30s); also caps the dial and TLS handshake timeouts (10s)")
	fs.StringArrayVar(&cfg.CertsDirs, "certs-dir", nil, "Directory of per-registry settings <dir>/<host[:port]>/{hosts.toml,*.crt,client.cert,client.key}, searched in order (default /etc/wharf/certs.d, /etc/docker/certs.d; $XDG_CONFIG_HOME/wharf/certs.d first when not root)")
	fs.StringArrayVar(&cfg.RegistryCertsDirs, "registry-certs-dir", nil, "Older name of --certs-dir")
	fs.StringVar(&cfg.ConfigFile, "config-file", "", "Daemon configuration file (default /etc/wharf/daemon.json when it exists)")
	fs.BoolVar(&cfg.TLSVerify, "tlsverify", false, "Serve tcp:// hosts over TLS and require client certificates signed by --tlscacert")
	fs.StringVar(&cfg.TLSCACert, "tlscacert", "", "Trust client certificates signed by this CA only (with --tlsverify)")
	fs.StringVar(&cfg.TLSCert, "tlscert", "", "Path to the server's TLS certificate (with --tlsverify)")
	fs.StringVar(&cfg.TLSKey, "tlskey", "", "Path to the server's TLS key (with --tlsverify)")
	fs.StringVar(&cfg.MinAPIVersion, "min-api-version", "", "Lowest API version clients may use (default "+types.DefaultMinAPIVersion+", at least "+types.MinSupportedAPIVersion+")")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "Serve Prometheus metrics at http://HOST:PORT/metrics (off by default; no authentication: keep it on loopback)")
	fs.StringVar(&cfg.SignaturePolicy, "signature-policy", "", "Signature policy in containers-policy.json(5) format: what inspect verifies and pull and copy refuse (default /etc/wharf/policy.json when it exists; $XDG_CONFIG_HOME/wharf/policy.json when not root)")
	fs.DurationVar(&cfg.CheckRemoteInterval, "check-remote-interval", 0, "Check every local tag against its registry (digest, newer versions, base) this often, with 10% jitter, and report changes as image events and metrics (off by default; at least 1s, under 1m for tests only; SIGHUP reloads it)")
	fs.StringVar(&cfg.CheckRemoteAuthFile, "check-remote-auth-file", "", "Docker config.json (auths, credHelpers, credsStore) with the registry credentials the check-remote-interval watch uses, each only for the registry it names (absolute path; keep it mode 0600; SIGHUP re-reads it; API requests never use it)")
	fs.Var((*byteSize)(&cfg.LayerIndexBudget), "layer-index-budget", "Disk the layer indexes of ls, cat and cp may use, least recently used evicted first: bytes or a size such as 2GiB (default "+defaultLayerIndexBudget+"; SIGHUP reloads it)")
	fs.BoolVar(&cfg.AllowInsecureTCP, "allow-insecure-tcp", false, "Allow tcp:// hosts without TLS (INSECURE: gives the network full control of the image store)")
}

// LoadConfig completes cfg, whose flags fs has parsed: it reads the config
// file (cfg.ConfigFile, else the default one when it exists), refuses unknown
// keys, bad values and keys also given as flags, fills the defaults for env,
// and validates the result.
func LoadConfig(cfg *Config, fs *pflag.FlagSet, env Env) error {
	path := cfg.ConfigFile
	explicit := path != ""
	if !explicit {
		path = env.defaultConfigFile()
	}
	if path != "" {
		b, err := readConfigFile(path)
		switch {
		case err == nil:
			cfg.ConfigFile = path
			if err := mergeConfigFile(cfg, fs, b); err != nil {
				return fmt.Errorf("unable to configure the daemon with file %s: %w", path, err)
			}
		case errors.Is(err, os.ErrNotExist) && !explicit:
			// The default file is optional.
		default:
			return fmt.Errorf("unable to read configuration file: %w", err)
		}
	}
	cfg.applyDefaults(env)
	if iv := cfg.CheckRemoteInterval; iv > 0 && iv < watchShortInterval {
		cfg.warnings = append(cfg.warnings, fmt.Sprintf("check-remote-interval %s is under %s: meant for tests; each round asks every registry about every local tag", iv, watchShortInterval))
	}
	if v := env.getenv(registryTimeoutEnv); v != "" {
		cfg.warnings = append(cfg.warnings, fmt.Sprintf("%s=%s is ignored: it is no longer read; use --registry-timeout or \"registry-timeout\" in daemon.json", registryTimeoutEnv, v))
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Read here, so that a start and a reload meet the same errors, and a
	// reload that cannot read it keeps the running configuration whole.
	cfg.watchAuth = nil
	if p := cfg.CheckRemoteAuthFile; p != "" {
		f, warn, err := loadAuthFile(p)
		if err != nil {
			return fmt.Errorf("invalid value for \"check-remote-auth-file\": %w", err)
		}
		cfg.watchAuth = f
		if warn != "" {
			cfg.warnings = append(cfg.warnings, warn)
		}
	}
	return nil
}

func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxConfigFile)
	}
	return b, nil
}

// mergeConfigFile applies the daemon.json document b to cfg.
func mergeConfigFile(cfg *Config, fs *pflag.FlagSet, b []byte) error {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("invalid JSON: more than one document")
	}
	// More is false for a stray closing bracket ("{…}}", a common slip
	// when editing): dockerd refuses any data after the object, so do we.
	// The offset (0-based, More skipped the white space) is the stray byte's.
	off := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("invalid JSON: data after the end of the object at byte %d", off)
	}
	if err := checkDuplicateKeys(b); err != nil {
		return err
	}
	known := map[string]bool{}
	for _, k := range fileKeyOfFlag {
		known[k] = true
	}
	var unknown []string
	for k := range raw {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("the following directives don't match any configuration option: %s", strings.Join(unknown, ", "))
	}

	// Decode each key alone so that a bad value names its key.
	var file Config
	fields := file.fieldsByKey()
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d := json.NewDecoder(bytes.NewReader(raw[k]))
		d.DisallowUnknownFields()
		if err := d.Decode(fields[k]); err != nil {
			return fmt.Errorf("invalid value for %q: %s: %w", k, redactURLs(string(raw[k])), err)
		}
	}

	var conflicts []string
	fs.Visit(func(f *pflag.Flag) {
		key, ok := fileKeyOfFlag[f.Name]
		if !ok {
			return
		}
		if v, inFile := raw[key]; inFile {
			conflicts = append(conflicts, fmt.Sprintf("%s: (from flag: %v, from file: %s)", key, redactURLs(flagValueString(f)), redactURLs(string(v))))
		}
	})
	if len(conflicts) > 0 {
		return fmt.Errorf("the following directives are specified both as a flag and in the configuration file: %s", strings.Join(conflicts, ", "))
	}

	dst := cfg.fieldsByKey()
	for _, k := range keys {
		copyField(dst[k], fields[k])
	}
	return nil
}

func flagValueString(f *pflag.Flag) string {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return "[" + strings.Join(sv.GetSlice(), " ") + "]"
	}
	return f.Value.String()
}

// fieldsByKey returns pointers to c's fields by daemon.json key.
func (c *Config) fieldsByKey() map[string]any {
	return map[string]any{
		"data-root":                &c.Root,
		"hosts":                    &c.Hosts,
		"debug":                    &c.Debug,
		"log-level":                &c.LogLevel,
		"insecure-registries":      &c.InsecureRegistries,
		"registry-mirrors":         &c.RegistryMirrors,
		"add-registry":             &c.AddRegistries,
		"block-registry":           &c.BlockRegistries,
		"max-concurrent-downloads": &c.MaxConcurrentDownloads,
		"registry-timeout":         (*jsonDuration)(&c.RegistryTimeout),
		"registry-certs-dirs":      &c.RegistryCertsDirs,
		"certs-dirs":               &c.CertsDirs,
		"tlsverify":                &c.TLSVerify,
		"tlscacert":                &c.TLSCACert,
		"tlscert":                  &c.TLSCert,
		"tlskey":                   &c.TLSKey,
		"min-api-version":          &c.MinAPIVersion,
		"metrics-addr":             &c.MetricsAddr,
		"check-remote-interval":    (*jsonDuration)(&c.CheckRemoteInterval),
		"check-remote-auth-file":   &c.CheckRemoteAuthFile,
		"layer-index-budget":       (*byteSize)(&c.LayerIndexBudget),
	}
}

func copyField(dst, src any) {
	switch d := dst.(type) {
	case *string:
		*d = *src.(*string)
	case *[]string:
		*d = *src.(*[]string)
	case *bool:
		*d = *src.(*bool)
	case *int:
		*d = *src.(*int)
	case *jsonDuration:
		*d = *src.(*jsonDuration)
	case *byteSize:
		*d = *src.(*byteSize)
	}
}

// urlUserinfo is the user[:password]@ of a URL in free text.
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s"'\]\[,]*@`)

// redactURLs hides the credentials of every URL in s (a registry mirror
// given as https://user:password@host), for errors that repeat settings.
func redactURLs(s string) string { return urlUserinfo.ReplaceAllString(s, "${1}xxxxx@") }

// jsonDuration is a time.Duration written in daemon.json as a Go duration
// string ("45s", "2m"), as the flag takes it.
type jsonDuration time.Duration

func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"45s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = jsonDuration(v)
	return nil
}

// certsDirs are the certs dirs the registry service reads: --certs-dir,
// then --registry-certs-dir (its older name); when neither is given, the
// defaults for env.
func (c *Config) certsDirs(env Env) []string {
	dirs := append(append([]string(nil), c.CertsDirs...), c.RegistryCertsDirs...)
	if len(dirs) > 0 {
		return dirs
	}
	return env.defaultCertsDirs()
}

// registryOptions are the registry settings of c that a reload may change.
func (c *Config) registryOptions(env Env) registry.ServiceOptions {
	return registry.ServiceOptions{
		InsecureRegistries: c.InsecureRegistries,
		Mirrors:            c.RegistryMirrors,
		AddRegistries:      c.AddRegistries,
		BlockRegistries:    c.BlockRegistries,
		CertsDirs:          c.certsDirs(env),
	}
}

// TLS returns the API's TLS settings.
func (c *Config) TLS() TLSOptions {
	return TLSOptions{Verify: c.TLSVerify, CACert: c.TLSCACert, Cert: c.TLSCert, Key: c.TLSKey}
}

// defaultMaxConcurrentDownloads is dockerd's default (3): enough to fill a
// typical link without hammering the registry.
const defaultMaxConcurrentDownloads = 3

func (c *Config) applyDefaults(env Env) {
	if c.Root == "" {
		c.Root = env.defaultRoot()
	}
	if len(c.Hosts) == 0 {
		c.Hosts = []string{"unix://" + env.defaultSocket()}
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.MaxConcurrentDownloads == 0 {
		c.MaxConcurrentDownloads = defaultMaxConcurrentDownloads
	}
	if c.MinAPIVersion == "" {
		c.MinAPIVersion = types.DefaultMinAPIVersion
	}
}

// Validate checks the values; each error names its key.
func (c *Config) Validate() error {
	if c.Root == "" || !filepath.IsAbs(c.Root) {
		return fmt.Errorf("invalid value for \"data-root\": %q is not an absolute path", c.Root)
	}
	if _, err := logrus.ParseLevel(c.LogLevel); err != nil {
		return fmt.Errorf("invalid value for \"log-level\": %q: use debug, info, warn, error or fatal", c.LogLevel)
	}
	if c.MinAPIVersion != "" { // "" is the default
		if err := types.ValidateMinAPIVersion(c.MinAPIVersion); err != nil {
			return fmt.Errorf("invalid value for \"min-api-version\": %w", err)
		}
	}
	if c.MaxConcurrentDownloads < 0 {
		return fmt.Errorf("invalid value for \"max-concurrent-downloads\": %d: must not be negative", c.MaxConcurrentDownloads)
	}
	if c.CheckRemoteInterval != 0 && c.CheckRemoteInterval < watchMinInterval {
		return fmt.Errorf("invalid value for \"check-remote-interval\": %s: must be 0 (off) or at least %s", c.CheckRemoteInterval, watchMinInterval)
	}
	if p := c.CheckRemoteAuthFile; p != "" && !filepath.IsAbs(p) {
		return fmt.Errorf("invalid value for \"check-remote-auth-file\": %q is not an absolute path", p)
	}
	if c.LayerIndexBudget < 0 {
		return fmt.Errorf("invalid value for \"layer-index-budget\": %d: must not be negative", c.LayerIndexBudget)
	}
	if c.RegistryTimeout < 0 {
		return fmt.Errorf("invalid value for \"registry-timeout\": %s: must not be negative", c.RegistryTimeout)
	}
	for _, d := range c.RegistryCertsDirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("invalid value for \"registry-certs-dirs\": %q is not an absolute path", d)
		}
	}
	for _, d := range c.CertsDirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("invalid value for \"certs-dirs\": %q is not an absolute path", d)
		}
	}
	for _, h := range c.Hosts {
		host, err := ParseHost(h)
		if err != nil {
			return fmt.Errorf("invalid value for \"hosts\": %w", err)
		}
		if host.Proto == "tcp" && !c.TLSVerify && !c.AllowInsecureTCP {
			return fmt.Errorf("refusing to listen on %s: the API would be open to the network without TLS; use --tlsverify --tlscacert --tlscert --tlskey, or pass --allow-insecure-tcp to do it anyway", h)
		}
	}
	if err := c.TLS().validate(); err != nil {
		return err
	}
	if err := validateMetricsAddr(c.MetricsAddr); err != nil {
		return err
	}
	for _, list := range []struct {
		key  string
		vals []string
	}{
		{"insecure-registries", c.InsecureRegistries},
		{"registry-mirrors", c.RegistryMirrors},
		{"add-registry", c.AddRegistries},
		{"block-registry", c.BlockRegistries},
	} {
		for _, v := range list.vals {
			if strings.TrimSpace(v) == "" || strings.ContainsAny(v, " \t\n") {
				return fmt.Errorf("invalid value for %q: %q", list.key, registry.RedactAddress(v))
			}
		}
	}
	return nil
}

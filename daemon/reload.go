package daemon

import (
	"fmt"
	"slices"
	"strings"
	"time"

	units "github.com/docker/go-units"
	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
)

// ConfigLoader loads the configuration again for a reload (SIGHUP): the
// flags as given at start, and daemon.json as it is now.
type ConfigLoader func() (*Config, error)

// NewConfigLoader returns the loader of a reload. Call it with cfg as the
// flags left it, before LoadConfig merges daemon.json into it.
func NewConfigLoader(cfg *Config, fs *pflag.FlagSet, env Env) ConfigLoader {
	flags := *cfg
	return func() (*Config, error) {
		c := flags
		if err := LoadConfig(&c, fs, env); err != nil {
			return nil, err
		}
		return &c, nil
	}
}

// reload applies what can change at run time, as dockerd's SIGHUP does:
// registry settings (insecure registries, mirrors, add- and
// block-registry, certs dirs with their hosts.toml files and certificates)
// and the log level. An invalid configuration is logged and changes
// nothing; the daemon never exits on a reload. Requests already running
// finish with the registry configuration they started with.
func (d *Daemon) reload(log *logrus.Entry) {
	log.Info("reloading the configuration (SIGHUP)")
	if d.opts.LoadConfig == nil {
		log.Warn("reload: this daemon was started without a configuration to reload; nothing changed")
		return
	}
	cfg, err := d.opts.LoadConfig()
	if err != nil {
		log.WithError(err).Error("reload failed; the running configuration is kept")
		return
	}
	// The policy is read before anything changes: one that does not load
	// keeps the running configuration whole, policy included.
	pol, err := loadPolicy(cfg, d.env())
	if err != nil {
		log.WithError(err).Error("reload failed; the running configuration (and signature policy) is kept")
		return
	}
	changes, err := d.registry.Reload(cfg.registryOptions(d.env()))
	if err != nil {
		log.WithError(err).Error("reload failed: registry configuration; the running configuration is kept")
		return
	}
	if rev := policyRevision(pol); rev != d.policyRevision {
		d.installPolicy(pol, cfg, d.env())
		changes = append(changes, fmt.Sprintf("signature-policy: %s → %s", orNone(d.policyRevision), orNone(rev)))
		d.policyRevision = rev
	}
	before := d.opts.Logger.GetLevel()
	if err := configureLogger(d.opts.Logger, cfg); err != nil { // validated by LoadConfig: cannot fail
		log.WithError(err).Error("reload: log level")
	}
	if after := d.opts.Logger.GetLevel(); after != before {
		changes = append(changes, fmt.Sprintf("log-level: %s → %s", before, after))
	}
	if d.watch != nil {
		if before := d.watch.Interval(); before != cfg.CheckRemoteInterval {
			d.watch.SetInterval(cfg.CheckRemoteInterval)
			changes = append(changes, fmt.Sprintf("check-remote-interval: %s → %s", intervalString(before), intervalString(cfg.CheckRemoteInterval)))
		}
		// Read again by LoadConfig on every reload (a file that cannot be
		// read failed the reload above): "changed" when its bytes did.
		// Never more than that: not the hosts, not a hash of the secrets.
		if before := watchFile(d.watch); !before.same(cfg.watchAuth) {
			d.watch.SetAuth(watchAuth(cfg.watchAuth))
			changes = append(changes, fmt.Sprintf("check-remote-auth-file: %s", authChange(before, cfg.watchAuth)))
		}
		if cfg.watchAuth != nil && cfg.watchAuth.warning != "" {
			log.Warn(cfg.watchAuth.warning)
		}
	}
	if cfg.LayerIndexBudget != d.layerIndexBudget {
		d.images.SetLayerIndexBudget(cfg.LayerIndexBudget)
		changes = append(changes, fmt.Sprintf("layer-index-budget: %s → %s", budgetString(d.layerIndexBudget), budgetString(cfg.LayerIndexBudget)))
		d.layerIndexBudget = cfg.LayerIndexBudget
	}
	for _, s := range fixedSettingsChanged(d.cfg, cfg) {
		log.Warnf("reload: %s changed; it takes effect at the next start", s)
	}
	if len(changes) == 0 {
		log.Info("configuration reloaded: nothing changed")
		return
	}
	log.WithField("changes", strings.Join(changes, "; ")).Info("configuration reloaded")
}

// authChange says how the auth file changed, for the reload's log.
func authChange(before, after *authFile) string {
	switch {
	case before == nil:
		return "none → " + after.String()
	case after == nil:
		return "removed (the watch asks anonymously)"
	}
	return "changed (" + after.String() + ")"
}

// budgetString is a layer-index-budget for the reload's log.
func budgetString(n int64) string {
	if n == 0 {
		return "default (" + defaultLayerIndexBudget + ")"
	}
	return units.BytesSize(float64(n))
}

// intervalString is a check-remote-interval for the reload's log: "off"
// for 0.
func intervalString(d time.Duration) string {
	if d == 0 {
		return "off"
	}
	return d.String()
}

// fixedSettingsChanged names the settings that differ between a and b and
// that only a restart applies.
func fixedSettingsChanged(a, b *Config) []string {
	var out []string
	if a.Root != b.Root {
		out = append(out, "data-root")
	}
	if !slices.Equal(a.Hosts, b.Hosts) {
		out = append(out, "hosts")
	}
	if a.TLS() != b.TLS() {
		out = append(out, "TLS of the API (tlsverify, tlscacert, tlscert, tlskey)")
	}
	if a.MaxConcurrentDownloads != b.MaxConcurrentDownloads {
		out = append(out, "max-concurrent-downloads")
	}
	if a.RegistryTimeout != b.RegistryTimeout {
		out = append(out, "registry-timeout")
	}
	if a.MinAPIVersion != b.MinAPIVersion {
		out = append(out, "min-api-version")
	}
	if a.MetricsAddr != b.MetricsAddr {
		out = append(out, "metrics-addr")
	}
	return out
}

// env is the environment the defaults come from.
func (d *Daemon) env() Env {
	if d.opts.Env.Getenv == nil {
		return OSEnv()
	}
	return d.opts.Env
}

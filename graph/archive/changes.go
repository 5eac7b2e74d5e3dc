package archive

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
)

// maxChangesLen caps the total length of import changes (1 MiB): they come
// from a query string, and real ones are a few lines.
const maxChangesLen = 1 << 20

// applyChanges applies Dockerfile instructions (docker import --change) to
// cfg: CMD, ENTRYPOINT, ENV, EXPOSE, LABEL, USER, WORKDIR, VOLUME,
// STOPSIGNAL, ONBUILD and SHELL, in shell or JSON form. Variables are not
// expanded. Anything else is InvalidArgument with dockerd's text.
func applyChanges(cfg *dockerspec.DockerOCIImageConfig, changes []string) error {
	total := 0
	cmdSet := false
	for _, c := range changes {
		total += len(c)
		if total > maxChangesLen {
			return fmt.Errorf("changes too long: more than %d bytes%.0w", maxChangesLen, errdefs.ErrInvalidArgument)
		}
		for _, line := range strings.Split(c, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			instr, rest := line, ""
			if i := strings.IndexAny(line, " \t"); i >= 0 {
				instr, rest = line[:i], line[i+1:]
			}
			rest = strings.TrimSpace(rest)
			var err error
			switch strings.ToLower(instr) {
			case "cmd":
				cfg.Cmd, err = commandForm(cfg, rest)
				cmdSet = true
			case "entrypoint":
				cfg.Entrypoint, err = commandForm(cfg, rest)
				if !cmdSet {
					// As in a Dockerfile: a new ENTRYPOINT resets an inherited CMD.
					cfg.Cmd = nil
				}
			case "shell":
				var sh []string
				if json.Unmarshal([]byte(rest), &sh) != nil || len(sh) == 0 {
					err = fmt.Errorf("SHELL requires the arguments to be in JSON form")
				}
				cfg.Shell = sh
			case "env":
				err = applyKeyValues(rest, "ENV", func(k, v string) { cfg.Env = setEnv(cfg.Env, k, v) })
			case "label":
				err = applyKeyValues(rest, "LABEL", func(k, v string) {
					if cfg.Labels == nil {
						cfg.Labels = map[string]string{}
					}
					cfg.Labels[k] = v
				})
			case "expose":
				err = applyExpose(cfg, rest)
			case "user":
				if rest == "" {
					err = fmt.Errorf("USER requires exactly one argument")
				}
				cfg.User = rest
			case "workdir":
				if rest == "" {
					err = fmt.Errorf("WORKDIR requires exactly one argument")
				} else if !path.IsAbs(rest) {
					rest = path.Join("/", cfg.WorkingDir, rest)
				}
				cfg.WorkingDir = rest
			case "volume":
				err = applyVolume(cfg, rest)
			case "stopsignal":
				if rest == "" || strings.ContainsAny(rest, " \t") {
					err = fmt.Errorf("STOPSIGNAL requires exactly one argument")
				}
				cfg.StopSignal = rest
			case "onbuild":
				if rest == "" {
					err = fmt.Errorf("ONBUILD requires at least one argument")
				}
				cfg.OnBuild = append(cfg.OnBuild, rest)
			default:
				err = fmt.Errorf("%s is not a valid change command", strings.ToLower(instr))
			}
			if err != nil {
				return fmt.Errorf("%w%.0w", err, errdefs.ErrInvalidArgument)
			}
		}
	}
	return nil
}

// commandForm reads CMD/ENTRYPOINT: a JSON array, else shell form run by
// the image's SHELL (default /bin/sh -c).
func commandForm(cfg *dockerspec.DockerOCIImageConfig, rest string) ([]string, error) {
	if strings.HasPrefix(rest, "[") {
		var args []string
		if err := json.Unmarshal([]byte(rest), &args); err == nil {
			return args, nil
		}
	}
	if rest == "" {
		return nil, nil
	}
	shell := cfg.Shell
	if len(shell) == 0 {
		shell = []string{"/bin/sh", "-c"}
	}
	return append(append([]string{}, shell...), rest), nil
}

// applyKeyValues parses "k=v k2=v2" (quotes and backslashes as in a
// Dockerfile) or the legacy "k v with spaces".
func applyKeyValues(rest, instr string, set func(k, v string)) error {
	words, err := splitWords(rest)
	if err != nil {
		return fmt.Errorf("%s: %v", instr, err)
	}
	if len(words) == 0 {
		return fmt.Errorf("%s requires at least one argument", instr)
	}
	if !strings.Contains(words[0], "=") {
		// Legacy form: the first word is the key, the rest of the line the value.
		k, v := rest, ""
		if i := strings.IndexAny(rest, " \t"); i >= 0 {
			k, v = rest[:i], rest[i+1:]
		}
		v = strings.TrimSpace(v)
		if v == "" {
			return fmt.Errorf("%s names can not be blank", instr)
		}
		set(k, v)
		return nil
	}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return fmt.Errorf("%s names can not be blank", instr)
		}
		set(k, v)
	}
	return nil
}

// splitWords splits on blanks outside quotes, removing quotes; inside
// double quotes and outside quotes a backslash escapes the next character.
func splitWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
		quote rune
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteRune(c)
			}
		case quote == '"':
			if c == '"' {
				quote = 0
			} else if c == '\\' && i+1 < len(rs) {
				i++
				cur.WriteRune(rs[i])
			} else {
				cur.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			in = true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unmatched quote")
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

func setEnv(env []string, k, v string) []string {
	for i, e := range env {
		if ek, _, _ := strings.Cut(e, "="); ek == k {
			env[i] = k + "=" + v
			return env
		}
	}
	return append(env, k+"="+v)
}

// applyExpose adds "port[/proto]" and "low-high[/proto]" entries.
func applyExpose(cfg *dockerspec.DockerOCIImageConfig, rest string) error {
	words, err := splitWords(rest)
	if err != nil || len(words) == 0 {
		return fmt.Errorf("EXPOSE requires at least one argument")
	}
	for _, w := range words {
		ports, proto, _ := strings.Cut(w, "/")
		if proto == "" {
			proto = "tcp"
		}
		proto = strings.ToLower(proto)
		if proto != "tcp" && proto != "udp" && proto != "sctp" {
			return fmt.Errorf("invalid proto: %s", proto)
		}
		lo, hi, isRange := strings.Cut(ports, "-")
		start, err1 := strconv.ParseUint(lo, 10, 16)
		end := start
		var err2 error
		if isRange {
			end, err2 = strconv.ParseUint(hi, 10, 16)
		}
		if err1 != nil || err2 != nil || start == 0 || end < start {
			return fmt.Errorf("invalid containerPort: %s", ports)
		}
		if end-start > 65535 {
			return fmt.Errorf("invalid port range: %s", ports)
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = map[string]struct{}{}
		}
		for p := start; p <= end; p++ {
			cfg.ExposedPorts[strconv.FormatUint(p, 10)+"/"+proto] = struct{}{}
		}
	}
	return nil
}

// applyVolume adds volumes given as a JSON array or space-separated paths.
func applyVolume(cfg *dockerspec.DockerOCIImageConfig, rest string) error {
	var vols []string
	if !strings.HasPrefix(rest, "[") || json.Unmarshal([]byte(rest), &vols) != nil {
		var err error
		if vols, err = splitWords(rest); err != nil {
			return fmt.Errorf("VOLUME: %v", err)
		}
	}
	if len(vols) == 0 {
		return fmt.Errorf("VOLUME requires at least one argument")
	}
	for _, v := range vols {
		v = strings.TrimSpace(v)
		if v == "" {
			return fmt.Errorf("VOLUME specified can not be an empty string")
		}
		if cfg.Volumes == nil {
			cfg.Volumes = map[string]struct{}{}
		}
		cfg.Volumes[v] = struct{}{}
	}
	return nil
}

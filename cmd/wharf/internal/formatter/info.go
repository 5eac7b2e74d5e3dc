package formatter

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/wharfproject/wharf/api/types"
)

// Info prints the image-daemon part of docker info's server section.
func Info(out io.Writer, answer types.Info) {
	info := answer.Info
	fmt.Fprintln(out, "Server:")
	fmt.Fprintf(out, " Images: %d\n", info.Images)
	fmt.Fprintf(out, " Server Version: %s\n", info.ServerVersion)
	fmt.Fprintf(out, " Storage Driver: %s\n", info.Driver)
	for _, kv := range info.DriverStatus {
		if len(kv) == 2 {
			fmt.Fprintf(out, "  %s: %s\n", kv[0], kv[1])
		}
	}
	fmt.Fprintf(out, " Operating System: %s\n", info.OperatingSystem)
	fmt.Fprintf(out, " OSType: %s\n", info.OSType)
	fmt.Fprintf(out, " Architecture: %s\n", info.Architecture)
	fmt.Fprintf(out, " CPUs: %d\n", info.NCPU)
	fmt.Fprintf(out, " Total Memory: %s\n", HumanBinary(info.MemTotal))
	fmt.Fprintf(out, " Name: %s\n", info.Name)
	fmt.Fprintf(out, " ID: %s\n", info.ID)
	fmt.Fprintf(out, " Docker Root Dir: %s\n", info.DockerRootDir)
	fmt.Fprintf(out, " Debug Mode: %v\n", info.Debug)
	if info.IndexServerAddress != "" {
		fmt.Fprintf(out, " Registry: %s\n", info.IndexServerAddress)
	}
	if len(info.Labels) > 0 {
		fmt.Fprintln(out, " Labels:")
		for _, l := range info.Labels {
			fmt.Fprintf(out, "  %s\n", l)
		}
	}
	if rc := info.RegistryConfig; rc != nil {
		var insecure []string
		for _, cidr := range rc.InsecureRegistryCIDRs {
			insecure = append(insecure, cidr.String())
		}
		for name, ic := range rc.IndexConfigs {
			if ic != nil && !ic.Secure {
				insecure = append(insecure, name)
			}
		}
		sort.Strings(insecure)
		if len(insecure) > 0 {
			fmt.Fprintln(out, " Insecure Registries:")
			for _, r := range insecure {
				fmt.Fprintf(out, "  %s\n", r)
			}
		}
		if len(rc.Mirrors) > 0 {
			fmt.Fprintln(out, " Registry Mirrors:")
			for _, m := range rc.Mirrors {
				fmt.Fprintf(out, "  %s\n", m)
			}
		}
	}
	registries(out, answer.WharfRegistries, time.Now())
	if len(info.Warnings) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, strings.Join(info.Warnings, "\n"))
	}
}

// registries prints what the daemon last heard of each registry's
// rate limit, and the back-off a 429 or 503 put it under.
func registries(out io.Writer, regs []types.RegistryStatus, now time.Time) {
	if len(regs) == 0 {
		return
	}
	fmt.Fprintln(out, " Registry Rate Limits:")
	for _, r := range regs {
		var parts []string
		if rl := r.RateLimit; rl != nil {
			limit := fmt.Sprintf("%d remaining", rl.Remaining)
			if rl.Limit > 0 {
				limit = fmt.Sprintf("%d of %d remaining", rl.Remaining, rl.Limit)
			}
			if rl.Window > 0 {
				limit += " per " + (time.Duration(rl.Window) * time.Second).String()
			}
			if !rl.Seen.IsZero() {
				limit += fmt.Sprintf(" (seen %s ago)", now.Sub(rl.Seen).Round(time.Second))
			}
			parts = append(parts, limit)
		}
		if r.BackoffUntil != nil {
			parts = append(parts, fmt.Sprintf("backed off for %s", r.BackoffUntil.Sub(now).Round(time.Second)))
		}
		if r.LimitResets != nil {
			parts = append(parts, "limit resets at "+r.LimitResets.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(out, "  %s: %s\n", r.Host, strings.Join(parts, "; "))
	}
}

package daemon

import (
	"strings"
	"testing"
)

func TestLayerIndexBudget(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		flags      []string
		want       int64
		wantErr    string
	}{
		{name: "default", file: `{}`},
		{name: "bytes in file", file: `{"layer-index-budget":1048576}`, want: 1 << 20},
		{name: "size string in file", file: `{"layer-index-budget":"2GiB"}`, want: 2 << 30},
		{name: "flag", file: `{}`, flags: []string{"--layer-index-budget", "512MiB"}, want: 512 << 20},
		{name: "negative", file: `{"layer-index-budget":-1}`, wantErr: `invalid value for "layer-index-budget": -1: must not be negative`},
		{name: "not a size", file: `{"layer-index-budget":"lots"}`, wantErr: `invalid value for "layer-index-budget": "lots"`},
		{name: "both", file: `{"layer-index-budget":"1GiB"}`, flags: []string{"--layer-index-budget", "2GiB"}, wantErr: `specified both as a flag and in the configuration file: layer-index-budget`},
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
			if cfg.LayerIndexBudget != tc.want {
				t.Fatalf("budget %d, want %d", cfg.LayerIndexBudget, tc.want)
			}
		})
	}
}

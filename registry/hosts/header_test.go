package hosts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckHeader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		values  []string
		wantErr string // "" = valid
	}{
		{name: "x-custom", values: []string{"value"}},
		{name: "X-Tab", values: []string{"a\tb"}},
		{name: "x", values: []string{""}},
		{name: "!#$%&'*+-.^_`|~09azAZ", values: []string{"ok"}},
		{name: "x", values: []string{"é ünicode"}}, // obs-text is allowed, as by net/http
		{name: "x", values: []string{strings.Repeat("v", maxHeaderValue)}},
		{name: "", values: []string{"v"}, wantErr: "empty name"},
		{name: "x wharf", values: []string{"v"}, wantErr: "invalid name"},
		{name: "x:y", values: []string{"v"}, wantErr: "invalid name"},
		{name: "x\r\ny", values: []string{"v"}, wantErr: "invalid name"},
		{name: "x", values: []string{"one\r\nX-Injected: yes"}, wantErr: "control byte 0x0d"},
		{name: "x", values: []string{"one\nX-Injected: yes"}, wantErr: "control byte 0x0a"},
		{name: "x", values: []string{"nul\x00"}, wantErr: "control byte 0x00"},
		{name: "x", values: []string{"ok", "del\x7f"}, wantErr: "control byte 0x7f"},
		{name: "x", values: []string{strings.Repeat("v", maxHeaderValue+1)}, wantErr: "longer than"},
	} {
		err := checkHeader(tc.name, tc.values)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%q %q: %v", tc.name, tc.values, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q %q: error %v, want one containing %q", tc.name, tc.values, err, tc.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "Injected") {
			t.Errorf("the error repeats the value (it may be a credential): %v", err)
		}
	}
}

// TestParseHostsFileRefusesBadHeaders: the file is refused when read, so
// that a reload reports it (red team finding 6 of issue 20).
func TestParseHostsFileRefusesBadHeaders(t *testing.T) {
	for _, toml := range []string{
		"[header]\nx = \"one\\r\\nX-Injected: yes\"",
		"[host.\"https://m\"]\n[host.\"https://m\".header]\nx = [\"ok\", \"two\\nlines\"]",
		"[host.\"https://m\".header]\n\"bad name\" = \"v\"",
		"[header]\n\"\" = \"v\"",
	} {
		if _, err := parseHostsFile("/base", []byte(toml)); err == nil || !strings.Contains(err.Error(), "header") {
			t.Errorf("%q: error %v, want one about the header", toml, err)
		}
	}
}

// FuzzCheckHeader: nothing checkHeader accepts can end a header line or
// hold a byte that net/http refuses to send (a control byte other than a
// tab, a name byte outside the token set).
func FuzzCheckHeader(f *testing.F) {
	f.Add("x-custom", "value")
	f.Add("x", "one\r\nX-Injected: yes")
	f.Add("bad name", "v")
	f.Add("x", "\x00")
	f.Fuzz(func(t *testing.T, name, value string) {
		if checkHeader(name, []string{value}) != nil {
			return
		}
		if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r > 0x7e || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) }) {
			t.Fatalf("accepted the name %q", name)
		}
		if strings.ContainsFunc(value, func(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }) {
			t.Fatalf("accepted the value %q", value)
		}
	})
}

// TestDiffNamesAHostsTomlWhoseHeaderChanged: a reload that changes only a
// header said "nothing changed"; it names the file (not the value).
func TestDiffNamesAHostsTomlWhoseHeaderChanged(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "localhost_5000_", "hosts.toml")
	load := func(value string) *Config {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		body := "[host.\"http://m:1\"]\n[host.\"http://m:1\".header]\nx-token = \"" + value + "\"\n"
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := New(Options{CertsDirs: []string{dir}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, same, b := load("secret-one"), load("secret-one"), load("secret-two")
	if d := Diff(a, same); len(d) != 0 {
		t.Errorf("the same file: %q", d)
	}
	d := Diff(a, b)
	if len(d) != 1 || !strings.Contains(d[0], file) || strings.Contains(d[0], "secret") {
		t.Errorf("a header's value changed: %q, want one line naming %s and no value", d, file)
	}
}

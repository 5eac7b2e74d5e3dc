package mirror

import (
	"errors"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/wharfproject/wharf/imagespec"
)

// Straight-line templates pass; control flow, other functions, and the
// ways a value could grow without bound are refused at parse time.
func TestBackupTemplateShape(t *testing.T) {
	d := digest.FromString("old")
	n, _ := reference.ParseNormalizedNamed("example.com/a")
	for _, tc := range []struct{ tmpl, want string }{
		{`{{$t := .Date}}{{.Tag}}-{{$t.Format "2006"}}`, "1.2-" + "20"},
		{`{{printf "%s-%s" .Tag .Digest.Short}}`, "1.2-" + d.Encoded()[:12]},
		{`{{.Tag | printf "%s-old"}}`, "1.2-old"},
		{`{{slice .Digest.Hex 0 8}}`, d.Encoded()[:8]},
		{`{{print .Tag "-" (len .Tag)}}`, "1.2-3"},
		{`{{printf "%[1]s-%[1]s" .Tag}}x`, "1.2-1.2x"},
		{`{{/* a comment */}}v{{"1"}}`, "v1"},
	} {
		bt, err := parseBackupTemplate(tc.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tc.tmpl, err)
		}
		got, err := bt.render(syncItem{dstName: n, tag: "1.2"}, d)
		if err != nil || !strings.HasPrefix(got, tc.want) {
			t.Fatalf("%s: render = %q, %v; want %q…", tc.tmpl, got, err, tc.want)
		}
	}
	for _, tmpl := range []string{
		`{{range 2000000000}}{{end}}x`,
		`{{range $i := 10}}{{$i}}{{end}}`,
		`{{if .Tag}}x{{end}}`,
		`{{with .Tag}}{{.}}{{end}}`,
		`{{define "a"}}x{{end}}{{template "a"}}`,
		`{{block "a" .}}x{{end}}`,
		`{{html .Tag}}`,
		`{{call .Tag}}`,
		`{{$l := "2006"}}{{.Date.Format $l}}`,                  // a method gets literals only
		`{{"2006" | .Date.Format}}`,                            // nor a piped value
		`{{.Date.Format (printf "2006")}}`,                     // nor a pipeline
		`{{(printf "x").Len}}`,                                 // no method of a result
		`{{printf "%0129d" 1}}`,                                // width over a tag
		`{{printf "%.1000000s" .Tag}}`,                         // precision
		`{{printf "%*d" 1000000 1}}`,                           // width from an argument
		`{{$a := printf "%0128d" 0}}{{$b := print $a $a $a}}x`, // a value over 256 bytes
	} {
		_, err := parseBackupTemplate(tmpl)
		if !errdefs.IsInvalidArgument(err) {
			t.Fatalf("%s: err = %v, want InvalidArgument", tmpl, err)
		}
	}
	_, err := parseBackupTemplate(`{{range 2000000000}}{{end}}`)
	if !errors.Is(err, errBackupTemplate) || !strings.Contains(err.Error(), "range") {
		t.Fatalf("range: err = %v, want errBackupTemplate naming range", err)
	}
}

func TestCheckBackupFormat(t *testing.T) {
	for f, ok := range map[string]bool{
		"%s": true, "%%": true, "%-12s": true, "%[2]s %[1]s": true, "%08.3f": true, "%": true, "x%": true,
		"%129d": false, "%.129s": false, "%*d": false, "%.*d": false, "%[1]*d": false, "%099999999999999999999d": false,
	} {
		if err := checkBackupFormat(f); (err == nil) != ok {
			t.Errorf("%q: err = %v, want ok=%v", f, err, ok)
		}
	}
}

// FuzzBackupTemplate: any template text is accepted or refused without a
// panic, and an accepted one renders a tag or an error.
func FuzzBackupTemplate(f *testing.F) {
	for _, s := range []string{`{{.Tag}}-backup-{{.Digest.Short}}`, `{{range 3}}{{end}}`, `{{printf "%-5s" .Tag}}`, `{{$t := .Date}}{{$t.Format "2006"}}`} {
		f.Add(s)
	}
	n, _ := reference.ParseNormalizedNamed("example.com/a")
	f.Fuzz(func(t *testing.T, s string) {
		_ = checkBackupFormat(s)
		bt, err := parseBackupTemplate(s)
		if err != nil || bt == nil {
			return
		}
		tag, err := bt.render(syncItem{dstName: n, tag: "1"}, digest.FromString(s))
		if err == nil && !imagespec.ValidTag(tag) {
			t.Fatalf("%q rendered %q", s, tag)
		}
	})
}

// Package formatter renders the daemon's answers as the wharf CLI prints
// them, as the docker CLI's cli/command/formatter does: --format templates
// with docker's functions, tables with docker's geometry, JSON arrays
// indented as `docker inspect`'s, sizes and ages in docker's units, and the
// rows and lines of each command's output. It does no I/O but to the writer
// it is given.
package formatter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"
	"text/template"
)

// templateFuncs are the functions of --format templates, as docker's
// (cli/templates): json, split, join, title, lower, upper, pad, truncate.
func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"json":     formatJSON,
		"split":    strings.Split,
		"join":     joinElements,
		"title":    titleASCII,
		"lower":    strings.ToLower,
		"upper":    strings.ToUpper,
		"pad":      padWithSpace,
		"truncate": truncateWithLength,
	}
}

// headerFuncs replace templateFuncs when a table header is rendered: the
// header keeps the column name whatever function is applied to the column.
func headerFuncs() template.FuncMap {
	return template.FuncMap{
		"json":     func(v string) string { return v },
		"split":    func(v string, _ string) string { return v },
		"join":     func(v string, _ string) string { return v },
		"title":    func(v string) string { return v },
		"lower":    func(v string) string { return v },
		"upper":    func(v string) string { return v },
		"truncate": func(v string, _ int) string { return v },
	}
}

// Parse parses a --format value with the template functions.
func Parse(format string) (*template.Template, error) {
	t, err := template.New("").Funcs(templateFuncs()).Parse(format)
	if err != nil {
		return nil, fmt.Errorf("template parsing error: %w", err)
	}
	return t, nil
}

// formatJSON is the template "json" function: compact JSON, HTML not escaped.
func formatJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSpace(buf.String()), nil
}

// joinElements joins a slice with sep; non-string elements are printed with fmt.
func joinElements(elems any, sep string) (string, error) {
	if elems == nil {
		return "", nil
	}
	if ss, ok := elems.([]string); ok {
		return strings.Join(ss, sep), nil
	}
	rv := reflect.ValueOf(elems)
	switch rv.Kind() {
	case reflect.Array, reflect.Slice:
		parts := make([]string, rv.Len())
		for i := range rv.Len() {
			parts[i] = fmt.Sprint(rv.Index(i).Interface())
		}
		return strings.Join(parts, sep), nil
	}
	return "", fmt.Errorf("join: expected a slice, got %T", elems)
}

// titleASCII upper-cases the first letter of every word (strings.Title for
// ASCII, which is what docker's templates use).
func titleASCII(s string) string {
	b := []byte(s)
	start := true
	for i, ch := range b {
		isLetter := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '\''
		if start && ch >= 'a' && ch <= 'z' {
			b[i] = ch - 'a' + 'A'
		}
		start = !isLetter
	}
	return string(b)
}

func padWithSpace(s string, prefix, suffix int) string {
	if s == "" {
		return s
	}
	return strings.Repeat(" ", prefix) + s + strings.Repeat(" ", suffix)
}

func truncateWithLength(s string, n int) string {
	if len(s) < n {
		return s
	}
	return s[:n]
}

// unescapeFormat turns the two-character sequences `\t` and `\n` a user types
// in a shell into a tab and a newline, as docker does.
func unescapeFormat(f string) string {
	return strings.NewReplacer(`\t`, "\t", `\n`, "\n").Replace(f)
}

// IsTable reports whether format asks for a table.
func IsTable(format string) bool { return strings.HasPrefix(format, "table") }

// Rows prints rows with a format: "table …" (header + aligned columns),
// "json" (one JSON object per row), or any Go template (one line per row).
type Rows struct {
	out     io.Writer
	tmpl    *template.Template
	table   bool
	tw      *tabwriter.Writer
	headers map[string]string
	wrote   bool
}

// NewRows parses format. headers maps field names to column titles.
func NewRows(out io.Writer, format string, headers map[string]string) (*Rows, error) {
	w := &Rows{out: out, headers: headers}
	switch {
	case format == "json":
		format = "{{json .}}"
	case IsTable(format):
		w.table = true
		format = strings.TrimPrefix(strings.TrimPrefix(format, "table"), " ")
	}
	format = unescapeFormat(format)
	t, err := Parse(format)
	if err != nil {
		return nil, err
	}
	w.tmpl = t
	if w.table {
		// Docker's table geometry: minimum cell width 10, tab width 1,
		// padding 3 spaces (cli/command/formatter/formatter.go).
		w.tw = tabwriter.NewWriter(out, 10, 1, 3, ' ', 0)
		w.out = w.tw
	}
	return w, nil
}

// header writes the table header, once.
func (w *Rows) header() error {
	if !w.table || w.wrote {
		return nil
	}
	w.wrote = true
	ht, err := w.tmpl.Clone()
	if err != nil {
		return err
	}
	ht.Funcs(headerFuncs())
	var buf bytes.Buffer
	if err := ht.Execute(&buf, w.headers); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	buf.WriteByte('\n')
	_, err = w.out.Write(buf.Bytes())
	return err
}

// Write renders one row.
func (w *Rows) Write(row any) error {
	if err := w.header(); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := w.tmpl.Execute(&buf, row); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.out.Write(buf.Bytes())
	return err
}

// Flush ends the output; a table with no rows still gets its header.
func (w *Rows) Flush() error {
	if err := w.header(); err != nil {
		return err
	}
	if w.tw != nil {
		return w.tw.Flush()
	}
	return nil
}

// JSONArray prints elements as one JSON array indented by 4 spaces, as
// `docker inspect` does; no elements print "[]".
func JSONArray(out io.Writer, elements []json.RawMessage) error {
	if len(elements) == 0 {
		_, err := io.WriteString(out, "[]\n")
		return err
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elements {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	var ind bytes.Buffer
	if err := json.Indent(&ind, b.Bytes(), "", "    "); err != nil {
		return fmt.Errorf("indenting JSON: %w", err)
	}
	ind.WriteByte('\n')
	_, err := out.Write(ind.Bytes())
	return err
}

// Templated prints each element through a --format template, one per
// line. Elements are decoded from their raw JSON, so every field the daemon
// sent (wharf's remote-only ones too) can be used.
func Templated(out io.Writer, format string, elements []json.RawMessage) error {
	t, err := Parse(unescapeFormat(format))
	if err != nil {
		return err
	}
	for _, e := range elements {
		var v any
		dec := json.NewDecoder(bytes.NewReader(e))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, v); err != nil {
			return fmt.Errorf("template: %w", err)
		}
		buf.WriteByte('\n')
		if _, err := out.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

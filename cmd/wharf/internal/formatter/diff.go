package formatter

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/wharfproject/wharf/api/types"
)

// Diff writes a diff as `wharf diff` shows it: the two images, then each
// section built under its heading, a line per difference marked "+"
// (added), "-" (removed) or "~" (changed) as container-diff marks them,
// "(no differences)" under a section that found none, and the sections
// that failed last.
func Diff(w io.Writer, d *types.ImageDiff) error {
	p := &printer{w: w}
	p.line("From: %s", sideLine(d.From))
	p.line("To:   %s", sideLine(d.To))
	if c := d.Config; c != nil {
		p.heading("CONFIG", len(c.Changes) == 0)
		for _, ch := range c.Changes {
			switch {
			case ch.From == "":
				p.line("+ %s: %s", ch.Field, ch.To)
			case ch.To == "":
				p.line("- %s: %s", ch.Field, ch.From)
			default:
				p.line("~ %s: %s -> %s", ch.Field, ch.From, ch.To)
			}
		}
	}
	if l := d.Layers; l != nil {
		p.heading("LAYERS", len(l.Added)+len(l.Removed) == 0)
		if len(l.Shared) > 0 {
			p.line("= %d shared, %s", len(l.Shared), HumanSize(layerBytes(l.Shared)))
		}
		for _, x := range l.Added {
			p.line("+ %s %s", x.Digest, HumanSize(x.Size))
		}
		for _, x := range l.Removed {
			p.line("- %s %s", x.Digest, HumanSize(x.Size))
		}
	}
	if pc := d.Pull; pc != nil {
		p.heading("PULL", false)
		p.line("%d layers, %s to download (%d already present)", len(pc.Layers), HumanSize(pc.Bytes), pc.Present)
		for _, x := range pc.Layers {
			p.line("+ %s %s", x.Digest, HumanSize(x.Size))
		}
	}
	if f := d.Files; f != nil {
		p.heading(fmt.Sprintf("FILES (%d layers indexed)", f.LayersIndexed), len(f.Changes) == 0)
		for _, c := range f.Changes {
			p.line("%s", fileLine(c))
		}
		if f.Truncated {
			p.line("… more changes not listed")
		}
	}
	if pk := d.Packages; pk != nil {
		p.heading("PACKAGES", pk.Empty())
		for _, x := range pk.Added {
			p.line("+ %s (%s) %s", x.Name, x.Type, x.Version)
		}
		for _, x := range pk.Removed {
			p.line("- %s (%s) %s", x.Name, x.Type, x.Version)
		}
		for _, x := range pk.Upgraded {
			p.line("~ %s (%s) %s -> %s", x.Name, x.Type, x.From, x.To)
		}
		for _, x := range pk.Downgraded {
			p.line("~ %s (%s) %s -> %s (downgrade)", x.Name, x.Type, x.From, x.To)
		}
	}
	if s := d.Source; s != nil {
		same := s.FromRepository == s.ToRepository && s.FromRevision == s.ToRevision
		p.heading("SOURCE", same && s.FromRepository == "")
		if s.FromRepository != "" || s.ToRepository != "" {
			if s.FromRepository == s.ToRepository {
				p.line("  repository: %s", s.FromRepository)
			} else {
				p.line("~ repository: %s -> %s", orNone(s.FromRepository), orNone(s.ToRepository))
			}
			if s.FromRevision == s.ToRevision {
				p.line("  revision: %s", orNone(s.FromRevision))
			} else {
				p.line("~ revision: %s -> %s", orNone(s.FromRevision), orNone(s.ToRevision))
			}
		}
		if s.CompareURL != "" {
			p.line("  compare: %s", s.CompareURL)
		}
	}
	if s := d.Signer; s != nil {
		p.heading("SIGNER", false)
		p.line("  from: %s", verdictLine(s.From, s.FromIdentity))
		p.line("  to:   %s", verdictLine(s.To, s.ToIdentity))
		switch {
		case s.Same:
			p.line("= the same signer")
		case s.Differs():
			p.line("~ another verdict or signer")
		}
	}
	if len(d.Errors) > 0 {
		p.heading("NOT BUILT", false)
		for _, sec := range types.DiffSections {
			if msg, ok := d.Errors[sec]; ok {
				p.line("! %s: %s", sec, msg)
			}
		}
	}
	return p.err
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *printer) heading(h string, empty bool) {
	p.line("")
	p.line("%s", h)
	if empty {
		p.line("  (no differences)")
	}
}

func sideLine(s types.DiffImage) string {
	out := s.Kind + ":" + s.Name
	var extra []string
	if s.Digest != "" {
		extra = append(extra, s.Digest)
	}
	if s.Platform != "" {
		extra = append(extra, s.Platform)
	}
	if len(extra) > 0 {
		out += " (" + strings.Join(extra, ", ") + ")"
	}
	return out
}

func layerBytes(ls []types.DiffLayer) int64 {
	var n int64
	for _, l := range ls {
		n += l.Size
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// fileLine is one path of the files section: its mark, its path, and
// what changed, or the size of what was added or removed.
func fileLine(c types.FileChange) string {
	mark := map[string]string{"added": "+", "removed": "-", "changed": "~"}[c.Change]
	if mark == "" {
		mark = "?"
	}
	var b strings.Builder
	b.WriteString(mark + " " + c.Path)
	e := c.To
	if c.Change == "removed" {
		e = c.From
	}
	switch {
	case c.Change == "changed":
		b.WriteString("  " + strings.Join(c.What, ","))
		if slices.Contains(c.What, "size") && c.From != nil && c.To != nil {
			fmt.Fprintf(&b, " (%s -> %s)", HumanSize(c.From.Size), HumanSize(c.To.Size))
		}
	case e != nil && e.Type == types.FileTypeFile:
		b.WriteString("  " + HumanSize(e.Size))
	case e != nil:
		b.WriteString("  " + e.Type)
	}
	if c.Unindexed != "" {
		b.WriteString("  [" + c.Unindexed + " side in the shared layers, not read]")
	}
	return b.String()
}

func verdictLine(t *types.Trust, identity string) string {
	if t == nil {
		return "no verdict (no signature policy applied)"
	}
	s := t.Decision
	if identity != "" {
		s += ", signed by " + identity
	} else {
		s += ", no verified signature"
	}
	return s
}

// Package manpage renders the wharf CLI's cobra command tree as go-md2man
// markdown man pages (NAME, SYNOPSIS, DESCRIPTION, COMMANDS, OPTIONS,
// EXAMPLES, SEE ALSO): the drafts `wharf gen-man --markdown` writes, from
// which man/*.md are written by hand.
package manpage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// manPageName is "wharf" or "wharf-CMD".
func manPageName(cmd *cobra.Command) string {
	return strings.ReplaceAll(cmd.CommandPath(), " ", "-")
}

// mdEscaper escapes what blackfriday would read as markup.
var mdEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "<", `\<`, ">", `\>`, "`", "\\`", "[", `\[`, "]", `\]`)

// manMarkdown renders cmd as a go-md2man page: NAME, SYNOPSIS, DESCRIPTION,
// OPTIONS, EXAMPLES, SEE ALSO.
func manMarkdown(cmd *cobra.Command) string {
	var b strings.Builder
	name := manPageName(cmd)
	title := fmt.Sprintf("%s 1 \"\" \"wharf\" \"wharf manual\"", strings.ToUpper(name))
	fmt.Fprintf(&b, "%s\n%s\n\n", title, strings.Repeat("=", len(title)))
	fmt.Fprintf(&b, "# NAME\n%s - %s\n\n", name, mdEscaper.Replace(cmd.Short))

	use := strings.TrimPrefix(cmd.Use, cmd.Name())
	fmt.Fprintf(&b, "# SYNOPSIS\n**%s**%s\n\n", cmd.CommandPath(), mdEscaper.Replace(use))

	desc := cmd.Long
	if desc == "" {
		desc = cmd.Short
	}
	fmt.Fprintf(&b, "# DESCRIPTION\n%s\n\n", mdEscaper.Replace(desc))

	if cmd.HasAvailableSubCommands() {
		b.WriteString("# COMMANDS\n")
		for _, c := range cmd.Commands() {
			if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
				continue
			}
			fmt.Fprintf(&b, "**%s**\n:   %s. See **%s(1)**.\n\n", c.Name(), mdEscaper.Replace(c.Short), manPageName(c))
		}
	}

	var flags []*pflag.Flag
	cmd.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "help" {
			flags = append(flags, f)
		}
	})
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	if len(flags) > 0 {
		b.WriteString("# OPTIONS\n")
		for _, f := range flags {
			b.WriteString(manFlag(f))
		}
	}

	if cmd.Example != "" {
		b.WriteString("# EXAMPLES\n")
		for _, line := range strings.Split(strings.TrimRight(cmd.Example, "\n"), "\n") {
			fmt.Fprintf(&b, "    %s\n", strings.TrimLeft(line, " "))
		}
		b.WriteString("\n")
	}

	b.WriteString("# SEE ALSO\n")
	if cmd.HasParent() {
		fmt.Fprintf(&b, "**%s(1)**\n", manPageName(cmd.Parent()))
	} else {
		b.WriteString("**wharfd(8)**\n")
	}
	return b.String()
}

// manFlag renders one flag as a definition-list item.
func manFlag(f *pflag.Flag) string {
	var b strings.Builder
	if f.Shorthand != "" {
		fmt.Fprintf(&b, "**-%s**, ", f.Shorthand)
	}
	fmt.Fprintf(&b, "**--%s**", f.Name)
	switch f.Value.Type() {
	case "bool":
		fmt.Fprintf(&b, "=*%s*", f.DefValue)
	case "stringArray", "stringSlice":
		b.WriteString("=*[]*")
	default:
		if f.DefValue != "" {
			fmt.Fprintf(&b, "=*%s*", mdEscaper.Replace(f.DefValue))
		} else {
			b.WriteString("=*\"\"*")
		}
	}
	b.WriteString("\n")
	lines := strings.Split(f.Usage, "\n")
	// Two trailing spaces keep the lines of a multi-line usage apart.
	fmt.Fprintf(&b, ":   %s", mdEscaper.Replace(lines[0]))
	for _, l := range lines[1:] {
		fmt.Fprintf(&b, "  \n    %s", mdEscaper.Replace(strings.Join(strings.Fields(l), " ")))
	}
	b.WriteString("\n")
	b.WriteString("\n")
	return b.String()
}

// WriteMarkdownTree writes one markdown page per visible command of the
// tree under cmd into dir (NAME.1.md), keeping a page already there unless
// force: pages written by hand win.
func WriteMarkdownTree(cmd *cobra.Command, dir string, force bool) error {
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := WriteMarkdownTree(c, dir, force); err != nil {
			return err
		}
	}
	path := filepath.Join(dir, manPageName(cmd)+".1.md")
	if !force {
		if _, err := os.Stat(path); err == nil {
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return os.WriteFile(path, []byte(manMarkdown(cmd)), 0o644)
}

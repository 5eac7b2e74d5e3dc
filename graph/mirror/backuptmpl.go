package mirror

import (
	"errors"
	"fmt"
	"strconv"
	"text/template"
	"text/template/parse"

	"github.com/containerd/errdefs"
)

// A backup template is straight-line code. text/template is a language
// with loops ({{range 2000000000}} iterates two billion times since Go
// 1.22) and calls no context, so a template is admitted only when every
// node of its parse tree is one of:
//
//   - text;
//   - an action whose pipeline declares or assigns variables, or not;
//   - a command that is a field or method chain ({{.Digest.Short}},
//     {{$t.Format "20060102"}}) whose arguments are literals, first in its
//     pipeline (a later command receives the previous value as an argument);
//   - a call of printf, print, len, index or slice, whose arguments are
//     literals, fields, variables or parenthesised pipelines of the same.
//
// Every action then runs once, and every value stays small: a method gets
// only literals (so .Date.Format cannot be fed its own output to grow it),
// and printf and print (backupFuncs) refuse a width or precision over
// maxBackupWidth and a result longer than maxBackupValue, so variables
// cannot double a string at each step either.
const (
	maxBackupWidth = 128 // a tag's length
	maxBackupValue = 256 // a repository name and a tag fit
)

// errBackupTemplate is a backup template refused for its shape.
var errBackupTemplate = errors.New("backup template")

// backupCalls are the functions a backup template may call.
var backupCalls = map[string]bool{"printf": true, "print": true, "len": true, "index": true, "slice": true}

// backupFuncs replace the builtins printf and print with bounded ones.
var backupFuncs = template.FuncMap{"printf": backupPrintf, "print": backupPrint}

func backupPrintf(format string, args ...any) (string, error) {
	if err := checkBackupFormat(format); err != nil {
		return "", err
	}
	return backupValue(fmt.Sprintf(format, args...))
}

func backupPrint(args ...any) (string, error) { return backupValue(fmt.Sprint(args...)) }

func backupValue(s string) (string, error) {
	if len(s) > maxBackupValue {
		return "", fmt.Errorf("a value of %d bytes, more than %d", len(s), maxBackupValue)
	}
	return s, nil
}

// checkBackupFormat refuses widths and precisions from arguments (*) and
// over maxBackupWidth: fmt pads in memory before printf returns.
func checkBackupFormat(f string) error {
	for i := 0; i < len(f); i++ {
		if f[i] == '%' {
			end, err := checkBackupDirective(f, i+1)
			if err != nil {
				return err
			}
			i = end
		}
	}
	return nil
}

// checkBackupDirective checks the directive after a '%' at f[i:] (flags,
// argument indexes, width, precision) and returns the index of its verb.
func checkBackupDirective(f string, i int) (int, error) {
	for ; i < len(f); i++ {
		switch c := f[i]; {
		case c == '*':
			return i, fmt.Errorf("printf: a width or precision from an argument (*) is not allowed")
		case c >= '0' && c <= '9':
			j := i
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
			if n, err := strconv.Atoi(f[i:j]); err != nil || n > maxBackupWidth {
				return i, fmt.Errorf("printf: width or precision %s is more than %d", f[i:j], maxBackupWidth)
			}
			i = j - 1
		case c == '[':
			for i < len(f) && f[i] != ']' {
				i++
			}
		case c == '+' || c == '-' || c == '#' || c == ' ' || c == '.':
		default:
			return i, nil // the verb (%% included)
		}
	}
	return i, nil
}

// checkBackupTemplate walks t's parse tree (see above).
func checkBackupTemplate(t *template.Template) error {
	if len(t.Templates()) > 1 {
		return backupRefused("define and block are not allowed")
	}
	if t.Tree == nil || t.Tree.Root == nil {
		return nil
	}
	return checkBackupNode(t.Tree.Root)
}

func backupRefused(format string, args ...any) error {
	return fmt.Errorf("%w: %s: a backup template may use text, fields, methods with literal arguments, variables and the functions printf, print, len, index and slice%.0w",
		errBackupTemplate, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
}

func checkBackupNode(n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if err := checkBackupNode(c); err != nil {
				return err
			}
		}
		return nil
	case *parse.TextNode, *parse.CommentNode:
		return nil
	case *parse.ActionNode:
		return checkBackupPipe(n.Pipe)
	}
	// range, if, with, template, break, continue: control flow.
	return backupRefused("%s is not allowed", n)
}

func checkBackupPipe(p *parse.PipeNode) error {
	if p == nil {
		return nil
	}
	for i, cmd := range p.Cmds {
		if len(cmd.Args) == 0 {
			continue
		}
		switch first := cmd.Args[0].(type) {
		case *parse.IdentifierNode:
			if !backupCalls[first.Ident] {
				return backupRefused("the function %s is not allowed", first.Ident)
			}
			for _, a := range cmd.Args[1:] {
				if err := checkBackupArg(a); err != nil {
					return err
				}
			}
		case *parse.FieldNode, *parse.ChainNode, *parse.VariableNode, *parse.DotNode:
			if i > 0 {
				return backupRefused("%s after | is not allowed (only a function may follow |)", cmd)
			}
			if c, ok := first.(*parse.ChainNode); ok {
				if _, ok := c.Node.(*parse.PipeNode); ok {
					return backupRefused("a method of a pipeline's result, %s, is not allowed", c)
				}
			}
			for _, a := range cmd.Args[1:] {
				if !backupLiteral(a) {
					return backupRefused("%s: a method takes only literal arguments", cmd)
				}
			}
		case *parse.PipeNode:
			if len(cmd.Args) > 1 {
				return backupRefused("%s is not allowed", cmd)
			}
			if err := checkBackupPipe(first); err != nil {
				return err
			}
		default:
			if !backupLiteral(first) || len(cmd.Args) > 1 {
				return backupRefused("%s is not allowed", cmd)
			}
		}
	}
	return nil
}

// checkBackupArg checks a function's argument.
func checkBackupArg(a parse.Node) error {
	switch a := a.(type) {
	case *parse.FieldNode, *parse.VariableNode, *parse.DotNode:
		return nil
	case *parse.PipeNode:
		return checkBackupPipe(a)
	}
	if backupLiteral(a) {
		return nil
	}
	return backupRefused("the argument %s is not allowed", a)
}

func backupLiteral(a parse.Node) bool {
	switch a.(type) {
	case *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
		return true
	}
	return false
}

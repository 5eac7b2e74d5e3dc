package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/wharfproject/wharf/client"
	"github.com/wharfproject/wharf/cmd/wharf/internal/creds"
	"github.com/wharfproject/wharf/internal/privdir"
)

// version is the CLI's version, set at build time with
// -ldflags "-X main.version=…".
var version = "dev"

// env is what the CLI reads from its environment; osEnv in production.
type env interface {
	Getenv(string) string
	Geteuid() int
}

type osEnv struct{}

func (osEnv) Getenv(k string) string { return os.Getenv(k) }
func (osEnv) Geteuid() int           { return os.Geteuid() }

// stream is a reader or writer that may be a terminal.
type streams struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

func newStreams(in io.Reader, out, errw io.Writer) streams {
	return streams{in: in, out: out, err: errw}
}

// fdOf returns the descriptor of f when it is an *os.File.
func fdOf(f any) (uintptr, bool) {
	if file, ok := f.(*os.File); ok {
		return file.Fd(), true
	}
	return 0, false
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	fd, ok := fdOf(f)
	return ok && term.IsTerminal(int(fd))
}

// cli is one invocation of the CLI: its streams, global flags and the lazily
// made client.
type cli struct {
	streams
	env   env
	host  string
	debug bool
	tls   tlsFlags // tls.go
	log   *logrus.Logger

	api *client.Client
}

// client returns the API client for the resolved host.
func (c *cli) client() (*client.Client, error) {
	if c.api != nil {
		return c.api, nil
	}
	cenv := client.Environment{Getenv: c.env.Getenv, Geteuid: c.env.Geteuid}
	host := client.ResolveHost(c.host, cenv)
	if host == "unix://"+client.DefaultSocket(cenv) {
		// The default socket may sit in a directory under the shared temp
		// dir: dial it only when no other user controls that directory
		// (internal/privdir), since requests carry registry credentials. A
		// directory that does not exist yet is left to the dial's error.
		if err := privdir.Check(filepath.Dir(client.DefaultSocket(cenv)), c.env.Geteuid()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	c.log.Debugf("using daemon at %s", host)
	opts := []client.Option{client.WithUserAgent("wharf/" + version),
		client.WithTrace(func(method, path string, status int) {
			c.log.Debugf("%s %s -> %d", method, path, status)
		})}
	tlsOpt, err := c.tlsOption()
	if err != nil {
		return nil, err
	}
	if tlsOpt != nil {
		opts = append(opts, tlsOpt)
	}
	api, err := client.New(host, opts...)
	if err != nil {
		return nil, err
	}
	c.api = api
	return api, nil
}

// creds finds the stored registry credentials of the CLI's environment.
func (c *cli) creds() *creds.Finder {
	return &creds.Finder{Getenv: c.env.Getenv, Debugf: c.log.Debugf}
}

// statusError ends the CLI with an exit status; an empty message prints nothing.
type statusError struct {
	status  int
	message string
}

func (e *statusError) Error() string { return e.message }

// run executes the CLI and returns its exit status.
func run(args []string, s streams, e env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cli{streams: s, env: e, log: logrus.New()}
	c.log.SetOutput(s.err)
	// Unquoted messages: "-D" lines are read by people (and grepped).
	c.log.SetFormatter(&logrus.TextFormatter{DisableQuote: true})
	c.log.SetLevel(logrus.InfoLevel)
	root := newRootCommand(c)
	root.SetArgs(args)
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	err := root.ExecuteContext(ctx)
	if c.api != nil {
		_ = c.api.Close()
	}
	if err == nil {
		return 0
	}
	var se *statusError
	if errors.As(err, &se) {
		if se.message != "" {
			fmt.Fprintln(s.err, se.message)
		}
		return se.status
	}
	fmt.Fprintln(s.err, err)
	return 1
}

// docCommands are the commands of files built with the gendocs tag
// (genman.go).
var docCommands []func(root *cobra.Command) *cobra.Command

// newRootCommand builds the command tree.
func newRootCommand(c *cli) *cobra.Command {
	root := &cobra.Command{
		Use:   "wharf [OPTIONS] COMMAND",
		Short: "A client for wharfd, the container image daemon",
		Long: "wharf talks to wharfd: it lists, inspects, tags, removes, imports, saves and loads " +
			"local images, pulls and pushes them, and inspects images in registries without " +
			"pulling them (wharf inspect --remote), and reads the files inside them without " +
			"running or pulling them (wharf ls, cat, cp).",
		SilenceErrors: true,
		SilenceUsage:  true,
		// Global flags come before the command, as with docker: history has a
		// -H of its own (--human).
		TraverseChildren: true,
		Version:          version,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if c.debug {
				c.log.SetLevel(logrus.DebugLevel)
			}
		},
	}
	// `wharf completion SHELL` stays available but out of help and man pages.
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetVersionTemplate("wharf version {{.Version}}\n")
	root.Flags().StringVarP(&c.host, "host", "H", "", "Daemon socket to connect to (unix:///path or tcp://host:port; default $"+client.HostEnv+", then the default socket)")
	root.Flags().BoolVarP(&c.debug, "debug", "D", false, "Enable debug mode (debug logs on stderr)")
	c.tls.install(root)
	// docker's flag errors: status 125 (the command did not run) and the
	// usage line.
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &statusError{status: 125, message: fmt.Sprintf("%s\n\nUsage:  %s\n\nRun '%s --help' for more information", err, cmd.UseLine(), cmd.CommandPath())}
	})
	root.AddCommand(
		newVersionCommand(c),
		newInfoCommand(c),
		newImagesCommand(c),
		newInspectCommand(c),
		newHistoryCommand(c),
		newAttestationsCommand(c),
		newTagCommand(c),
		newTagsCommand(c),
		newLsCommand(c),
		newDiffCommand(c),
		newCatCommand(c),
		newCpCommand(c),
		newPackagesCommand(c),
		newRmiCommand(c),
		newImportCommand(c),
		newSaveCommand(c),
		newLoadCommand(c),
		newEventsCommand(c),
		newPullCommand(c),
		newPushCommand(c),
		newCopyCommand(c),
		newSyncCommand(c),
		newLoginCommand(c),
		newLogoutCommand(c),
		newSystemCommand(c),
		newTrustCommand(c),
		newGenCompletionCommand(root),
	)
	for _, f := range docCommands {
		root.AddCommand(f(root))
	}
	root.SetHelpCommand(newHelpCommand(root))
	// cobra adds its hidden `completion` group only when the CLI runs;
	// adding it now lets refuseUnknownCommands cover it too.
	root.InitDefaultCompletionCmd()
	refuseUnknownCommands(root)
	// Command groups are runnable now (they refuse unknown words), and
	// cobra's usage would then print two usage lines for them, the
	// group's and "CMD [command]": keep the one that names COMMAND.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), cobraUsageLines, "Usage:\n  {{.UseLine}}", 1))
	return root
}

// cobraUsageLines is the head of cobra's default usage template.
const cobraUsageLines = "Usage:{{if .Runnable}}\n  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}\n  {{.CommandPath}} [command]{{end}}"

// refuseUnknownCommands makes the root and every command group fail on a
// word that names none of their subcommands, as docker does; cobra shows
// the help and exits 0 instead, so `wharf copy a b` passed in scripts.
// Groups without a word of their own show their help. It also drops
// cobra's " [flags]" from the usage lines, which docker's do not have.
func refuseUnknownCommands(cmd *cobra.Command) {
	cmd.DisableFlagsInUseLine = true
	if cmd.HasSubCommands() {
		cmd.Args = unknownCommand
		if cmd.RunE == nil && cmd.Run == nil {
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
	for _, sub := range cmd.Commands() {
		refuseUnknownCommands(sub)
	}
}

// unknownCommand is the Args of the root and of command groups.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if !cmd.HasParent() {
		return &statusError{status: 1, message: fmt.Sprintf("%s: unknown command: %s %s\n\nRun '%s --help' for more information",
			cmd.Name(), cmd.CommandPath(), args[0], cmd.CommandPath())}
	}
	return &statusError{status: 1, message: fmt.Sprintf("%s: unknown command: %s %s\n\nUsage:  %s\n\nRun '%s --help' for more information",
		cmd.Root().Name(), cmd.CommandPath(), args[0], cmd.UseLine(), cmd.CommandPath())}
}

// newHelpCommand is cobra's `help [command]`, except that an unknown topic
// is an error (exit 1), as with docker.
func newHelpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long: "Help provides help for any command in the application.\n" +
			"Simply type " + root.Name() + " help [path to command] for full details.",
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			target, _, err := root.Find(args)
			if err != nil || target == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, sub := range target.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, sub.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return &statusError{status: 1, message: "unknown help topic: " + strings.Join(args, " ")}
			}
			return target.Help()
		},
	}
}

// The argument-count checks, with the docker CLI 28's words (its
// cli/required.go) and status 1.

func argsError(cmd *cobra.Command, what, seeOrRun string) error {
	return &statusError{status: 1, message: fmt.Sprintf("%s: '%s' %s\n\nUsage:  %s\n\n%s '%s --help' for more information",
		cmd.Root().Name(), cmd.CommandPath(), what, cmd.UseLine(), seeOrRun, cmd.CommandPath())}
}

func arguments(n int) string {
	if n == 1 {
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}

// requiresMinArgs: at least n arguments.
func requiresMinArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= n {
			return nil
		}
		return argsError(cmd, "requires at least "+arguments(n), "See")
	}
}

// requiresExactArgs: exactly n arguments.
func requiresExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		return argsError(cmd, "requires "+arguments(n), "Run")
	}
}

// requiresRangeArgs: lo to hi arguments (lo 0: "at most").
func requiresRangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= lo && len(args) <= hi {
			return nil
		}
		if lo == 0 {
			return argsError(cmd, "requires at most "+arguments(hi), "Run")
		}
		return argsError(cmd, fmt.Sprintf("requires at least %d and at most %s", lo, arguments(hi)), "Run")
	}
}

// noArgs rejects positional arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return argsError(cmd, "accepts no arguments", "Run")
}

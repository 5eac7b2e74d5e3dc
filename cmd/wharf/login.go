package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/moby/moby/api/types/registry"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/wharfproject/wharf/cmd/wharf/internal/creds"
)

// maxPasswordStdin caps --password-stdin (64 KiB): a password or token is
// far smaller, and the CLI must not read an endless pipe into memory.
const maxPasswordStdin = 64 << 10

type loginOptions struct {
	username, password string
	passwordStdin      bool
}

func newLoginCommand(c *cli) *cobra.Command {
	var o loginOptions
	cmd := &cobra.Command{
		Use:   "login [OPTIONS] [SERVER]",
		Short: "Log in to a registry",
		Long:  "Log in to a registry. The daemon checks the credentials; they are then stored in the docker config ($DOCKER_CONFIG/config.json, default ~/.docker/config.json) or its credential helper. The default server is docker.io.",
		Args:  requiresRangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server := "docker.io"
			if len(args) == 1 {
				server = args[0]
			}
			return runLogin(c, cmd, server, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.username, "username", "u", "", "Username")
	fl.StringVarP(&o.password, "password", "p", "", "Password or Personal Access Token (PAT)")
	fl.BoolVar(&o.passwordStdin, "password-stdin", false, "Take the Password or Personal Access Token (PAT) from stdin")
	return cmd
}

func runLogin(c *cli, cmd *cobra.Command, server string, o loginOptions) error {
	if o.password != "" {
		fmt.Fprintln(c.err, "WARNING! Using --password via the CLI is insecure. Use --password-stdin.")
		if o.passwordStdin {
			return errors.New("--password and --password-stdin are mutually exclusive")
		}
	}
	if o.passwordStdin {
		if o.username == "" {
			return errors.New("Must provide --username with --password-stdin")
		}
		b, err := io.ReadAll(io.LimitReader(c.in, maxPasswordStdin))
		if err != nil {
			return err
		}
		o.password = strings.TrimRight(string(b), "\r\n")
	}
	key := creds.ServerKey(server)
	if o.username == "" || o.password == "" {
		if err := promptCredentials(c, key, &o); err != nil {
			return err
		}
	}
	if o.password == "" {
		return errors.New("Error: Password Required")
	}
	api, err := c.client()
	if err != nil {
		return err
	}
	res, err := api.Login(cmd.Context(), registry.AuthConfig{Username: o.username, Password: o.password, ServerAddress: key})
	if err != nil {
		return err
	}
	store, err := c.creds().Open()
	if err != nil {
		return err
	}
	cred := registry.AuthConfig{Username: o.username, Password: o.password}
	if res.IdentityToken != "" {
		// Like docker: keep the identity token, not the password.
		cred = registry.AuthConfig{Username: o.username, IdentityToken: res.IdentityToken}
	}
	if err := store.Put(cmd.Context(), key, cred); err != nil {
		return fmt.Errorf("error saving credentials: %w", err)
	}
	status := res.Status
	if status == "" {
		status = "Login Succeeded"
	}
	fmt.Fprintln(c.out, status)
	return nil
}

// promptCredentials asks for what is missing on a terminal; the password is
// read without echo.
func promptCredentials(c *cli, key string, o *loginOptions) error {
	inFile, ok := c.in.(*os.File)
	if !ok || !term.IsTerminal(int(inFile.Fd())) {
		return errors.New("Error: Cannot perform an interactive login from a non TTY device")
	}
	r := bufio.NewReader(inFile)
	if o.username == "" {
		fmt.Fprintf(c.out, "Username: ")
		line, err := r.ReadString('\n')
		if err != nil && line == "" {
			return fmt.Errorf("reading username: %w", err)
		}
		o.username = strings.TrimSpace(line)
		if o.username == "" {
			return errors.New("Error: Non-null Username Required")
		}
	}
	if o.password == "" {
		fmt.Fprintf(c.out, "Password: ")
		b, err := term.ReadPassword(int(inFile.Fd()))
		fmt.Fprintln(c.out)
		if err != nil {
			return fmt.Errorf("reading password: %w", err)
		}
		o.password = string(b)
	}
	_ = key
	return nil
}

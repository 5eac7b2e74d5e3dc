// Command wharfd is the wharf daemon: a local image store that speaks the
// image part of the Docker Engine API, with remote inspection.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/wharfproject/wharf/daemon"
)

// Set at link time: -ldflags "-X main.version=… -X main.gitCommit=… -X main.buildTime=…".
var (
	version   = "dev"
	gitCommit = ""
	buildTime = ""
)

func main() {
	if err := newCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "wharfd:", err)
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	cfg := &daemon.Config{}
	var showVersion bool
	cmd := &cobra.Command{
		Use:           "wharfd [OPTIONS]",
		Short:         "A container-image daemon speaking the Docker Engine image API, with remote inspection",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				fmt.Fprintf(cmd.OutOrStdout(), "wharfd version %s, build %s\n", version, gitCommit)
				return nil
			}
			// SIGHUP reloads, as dockerd's does; caught from the start so
			// that one arriving during start-up (or a load) is a reload,
			// not the end of the process.
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			env := daemon.OSEnv()
			loader := daemon.NewConfigLoader(cfg, cmd.Flags(), env)
			if err := daemon.LoadConfig(cfg, cmd.Flags(), env); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			// After the first signal, restore the default action so that a
			// second SIGINT/SIGTERM kills a daemon stuck in shutdown.
			go func() {
				<-ctx.Done()
				stop()
			}()
			logger := logrus.StandardLogger()
			logger.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "2006-01-02T15:04:05.000000000Z07:00"})
			return daemon.Run(ctx, cfg, daemon.Options{
				Version:    version,
				GitCommit:  gitCommit,
				BuildTime:  buildTime,
				Logger:     logger,
				Env:        env,
				Reload:     hup,
				LoadConfig: loader,
			})
		},
	}
	daemon.InstallFlags(cmd.Flags(), cfg)
	cmd.Flags().BoolVarP(&showVersion, "version", "v", false, "Print version information and quit")
	return cmd
}

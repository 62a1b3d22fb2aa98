// Command berth is a small, fast, Kubernetes-compatible cluster in one binary. `berth up`
// runs all of it; the other subcommands run one component each.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
	"github.com/berth-cluster/berth/pkg/version"
)

func main() {
	// One process, many failure domains (DESIGN.md): a library goroutine's panic is contained.
	panics.ContainLibraryPanics()
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "berth",
		Short:         "A small, fast, Kubernetes-compatible cluster in one binary",
		Version:       version.GitVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	root.PersistentFlags().AddGoFlagSet(klogFlags)
	root.AddCommand(
		newUpCommand(),
		newAPIServerCommand(),
		newControllersCommand(),
		newSchedulerCommand(),
		newNodeCommand(),
		newSimCommand(),
		newKubeconfigCommand(),
		newBenchCommand(),
		newImageCommand(),
	)
	return root
}

// signalContext is cancelled by the first SIGINT or SIGTERM; a second one exits at once.
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-ch
		klog.Info("Shutting down; signal again to exit at once")
		cancel()
		<-ch
		os.Exit(1)
	}()
	return ctx, cancel
}

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-cluster/berth/pkg/cluster"
)

func newDownCommand() *cobra.Command {
	var dataDir string
	var cleanup bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the berth up of a data dir; with --cleanup, remove its pods and network too",
		Long: `down stops the berth up (and the berth node) that runs on DATA_DIR as Ctrl-C would
(SIGTERM), and waits for it to exit. A stopped node leaves its pods running in containerd's
shims, so that the next start on the same data dir finds them again. With --cleanup, down
also removes what the node left on the machine: every pod's containers, sandboxes and logs
(through berth's own containerd, started again for that if needed), containerd and its
shims, the mounts under DATA_DIR, the pod bridge, the masquerade rule and the CNI cache
entries of its network. The data dir itself (certificates, etcd's data, images) stays.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			ctx, cancel := signalContext()
			defer cancel()
			pids, err := cluster.Stop(ctx, dataDir, timeout)
			switch {
			case errors.Is(err, cluster.ErrNotRunning):
				fmt.Fprintf(out, "Nothing was running on data dir %s.\n", dataDir)
			case err != nil:
				return err
			default:
				for _, pid := range pids {
					fmt.Fprintf(out, "Stopped berth (pid %d) on data dir %s.\n", pid, dataDir)
				}
			}
			if !cleanup {
				return nil
			}
			ctx, cancelCleanup := context.WithTimeout(ctx, 5*time.Minute)
			defer cancelCleanup()
			done, err := cluster.Cleanup(ctx, dataDir)
			if done.Bridge != "" {
				fmt.Fprintf(out, "Removed %d pod sandboxes, ended %d leftover containerd processes, deleted bridge %s and its masquerade rule.\n",
					done.Sandboxes, done.Processes, done.Bridge)
			} else {
				fmt.Fprintf(out, "No pod network of berth's containerd in %s to clean up.\n", dataDir)
			}
			if err != nil {
				return fmt.Errorf("cleaning up: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", cluster.DefaultDataDir(), "data dir of the berth up to stop")
	cmd.Flags().BoolVar(&cleanup, "cleanup", false, "also remove every pod, containerd and its shims, the mounts under the data dir, the pod bridge and its iptables rules")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long to wait for berth up to exit after SIGTERM")
	return cmd
}

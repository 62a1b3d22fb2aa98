package main

import (
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-cluster/berth/pkg/bench"
)

func newBenchCommand() *cobra.Command {
	var cpuProfile string
	var stopProfile func()
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run a benchmark scenario and print what it measured (a table, then one JSON line)",
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if cpuProfile == "" {
				return nil
			}
			f, err := os.Create(cpuProfile)
			if err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
			return nil
		},
		PersistentPostRun: func(*cobra.Command, []string) {
			if stopProfile != nil {
				stopProfile()
			}
		},
	}
	cmd.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this process (for scenarios that run the cluster in process) to this file")
	cmd.AddCommand(newBenchAPICommand(), newBenchScheduleCommand(), newBenchStartupCommand(), newBenchCRICommand(),
		newBenchDensityCommand(), newBenchChurnCommand(), newBenchWorkloadsCommand(), newBenchCRDsCommand())
	return cmd
}

func newBenchCRDsCommand() *cobra.Command {
	var o bench.CRDOptions
	cmd := &cobra.Command{
		Use:   "crds",
		Short: "What installed CustomResourceDefinitions cost a berth up it starts: memory, time to Established, first writes, restart time",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return bench.RunCRDs(ctx, cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().IntVar(&o.CRDs, "crds", 100, "CustomResourceDefinitions to install")
	cmd.Flags().DurationVar(&o.IdleWait, "idle-wait", 45*time.Second, "how long the cluster idles before each memory reading")
	return cmd
}

func newBenchAPICommand() *cobra.Command {
	var o bench.APIOptions
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Latency of pod create, get, list, patch and delete, watch event delay, and (for a cluster it starts) berth up's memory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return bench.RunAPI(ctx, cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "cluster to load (default: start a berth up in a temporary directory)")
	cmd.Flags().IntVar(&o.Pods, "pods", 1000, "pods to create, get, patch and delete")
	cmd.Flags().IntVar(&o.Lists, "lists", 20, "how many times to list all of them")
	cmd.Flags().DurationVar(&o.IdleWait, "idle-wait", 10*time.Second, "how long a started cluster idles before its memory is read")
	return cmd
}

func newBenchScheduleCommand() *cobra.Command {
	var o bench.ScheduleOptions
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Scheduler throughput and per-pod latency on nodes that are API objects only",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return bench.RunSchedule(ctx, cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "cluster to load, with a scheduler (default: start a control plane and a scheduler in this process)")
	cmd.Flags().IntVar(&o.Nodes, "nodes", 5000, "nodes to create")
	cmd.Flags().IntVar(&o.Pods, "pods", 10000, "pods to create")
	cmd.Flags().IntVar(&o.Creators, "creators", 32, "goroutines creating pods at once")
	return cmd
}

func newBenchCRICommand() *cobra.Command {
	var o bench.CRIOptions
	cmd := &cobra.Command{
		Use:   "cri",
		Short: "The runtime's share of pod start-up: the startup scenario's pods started straight through the CRI",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return bench.RunCRI(ctx, cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringVar(&o.Endpoint, "runtime-endpoint", "", "CRI endpoint (default: start berth's containerd in a temporary directory; needs root)")
	cmd.Flags().IntVar(&o.Pods, "pods", 1, "pods started at once")
	cmd.Flags().IntVar(&o.Rounds, "rounds", 1, "how many times")
	cmd.Flags().BoolVar(&o.HostNetwork, "host-network", false, "pods in the host's network namespace (no CNI)")
	return cmd
}

func newBenchStartupCommand() *cobra.Command {
	var o bench.StartupOptions
	cmd := &cobra.Command{
		Use:   "startup",
		Short: "Pod startup latency (Kubernetes' SLI: creation to all containers started, image present)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return bench.RunStartup(ctx, cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "cluster with a Ready node (default: start berth up with its node agent in a temporary directory; needs root)")
	cmd.Flags().IntVar(&o.Pods, "pods", 1, "pods created at once")
	cmd.Flags().IntVar(&o.Rounds, "rounds", 1, "how many times to create them (deleting them in between)")
	cmd.Flags().StringVar(&o.Image, "image", "", "image of the pods' container, already on the node (default: berth's sandbox image)")
	return cmd
}

func newBenchDensityCommand() *cobra.Command {
	var o bench.DensityOptions
	cmd := &cobra.Command{
		Use:   "density",
		Short: "Pods created on simulated nodes (berth sim): time until all Running, pods/s end to end, peak memory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return bench.RunDensity(ctx, cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "cluster to load, with a scheduler (default: start berth up in a temporary directory); berth sim is started against it")
	cmd.Flags().IntVar(&o.Nodes, "nodes", 100, "simulated nodes")
	cmd.Flags().IntVar(&o.Pods, "pods", 1000, "pods to create")
	cmd.Flags().IntVar(&o.Creators, "creators", 32, "goroutines creating pods at once")
	cmd.Flags().DurationVar(&o.Hold, "hold", 0, "after all are Running, keep them for this long, checking every 10 s that every node is Ready with a fresh Lease and every pod Running")
	return cmd
}

func newBenchChurnCommand() *cobra.Command {
	var o bench.ChurnOptions
	cmd := &cobra.Command{
		Use:   "churn",
		Short: "Create and delete pods on simulated nodes at a rate for a while: nothing lost or stuck, memory and goroutines back to their baseline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return bench.RunChurn(ctx, cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "cluster to load, with a scheduler (default: start berth up in a temporary directory); berth sim is started against it")
	cmd.Flags().IntVar(&o.Nodes, "nodes", 100, "simulated nodes")
	cmd.Flags().DurationVar(&o.Duration, "duration", time.Minute, "how long to create pods")
	cmd.Flags().Float64Var(&o.Rate, "rate", 50, "pods created (and deleted) per second")
	cmd.Flags().DurationVar(&o.Lifetime, "lifetime", 30*time.Second, "how long after its creation each pod is deleted")
	cmd.Flags().DurationVar(&o.Settle, "settle", 2*time.Minute, "how long to wait after the last deletion before reading memory and goroutines again")
	return cmd
}

func newBenchWorkloadsCommand() *cobra.Command {
	var o bench.WorkloadsOptions
	cmd := &cobra.Command{
		Use:   "workloads",
		Short: "The workload controllers on simulated nodes (berth sim): a DaemonSet on every node, a Deployment scaled from 0, their times and CPU",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return bench.RunWorkloads(ctx, cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "cluster to load, with a scheduler and the controllers (default: start berth up in a temporary directory); berth sim is started against it")
	cmd.Flags().IntVar(&o.Nodes, "nodes", 1000, "simulated nodes, each of which gets a DaemonSet pod")
	cmd.Flags().Int32Var(&o.Replicas, "replicas", 10000, "replicas the Deployment is scaled to from 0")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 15*time.Minute, "how long each step may take")
	return cmd
}

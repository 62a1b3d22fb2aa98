package main

import (
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/scheduler"
	"github.com/berth-cluster/berth/pkg/scheduler/config"
)

func newSchedulerCommand() *cobra.Command {
	var kubeconfigPath, configPath string
	var o scheduler.ServerOptions
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the scheduler against an API server",
		Long: `scheduler schedules the pods whose spec.schedulerName matches one of its profiles,
as kube-scheduler does. --config takes a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)
file: profiles, plugins, pluginConfig, percentageOfNodesToScore, parallelism, extenders and
leader election (on by default, with the kube-system/kube-scheduler Lease, so that several
instances can run and one schedules).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
			if err != nil {
				return err
			}
			cfg, err := config.Load(configPath)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			return scheduler.Run(ctx, restConfig, cfg, o)
		},
	}
	cmd.Flags().StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the cluster")
	cmd.Flags().StringVar(&configPath, "config", "", "KubeSchedulerConfiguration file (default: kube-scheduler's defaults)")
	cmd.Flags().StringVar(&o.Address, "health-address", "127.0.0.1:10259", "address of the HTTP server for /healthz, /readyz and /metrics (empty: none)")
	cmd.Flags().StringVar(&o.Identity, "identity", "", "name of this instance in the leader election Lease (default: hostname_uuid)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

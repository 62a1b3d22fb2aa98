package main

import (
	"github.com/spf13/cobra"
)

func newAPIServerCommand() *cobra.Command {
	var f controlPlaneFlags
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run the Kubernetes API server alone",
		Long: `apiserver runs only the API server, on an embedded etcd or, with --etcd-servers, on an
external one. Namespaces are emptied and default service accounts appear only while
'berth controllers' (or 'berth up') runs against it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			return runControlPlane(cmd, cfg)
		},
	}
	f.add(cmd)
	return cmd
}

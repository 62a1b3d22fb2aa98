package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/cluster/pki"
)

func newKubeconfigCommand() *cobra.Command {
	var dataDir, user, server string
	var groups []string
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print a kubeconfig for a user, with a client certificate signed by the cluster CA",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The CA must exist already: a certificate from a new CA would be worthless.
			if _, err := os.Stat(filepath.Join(cluster.PKIDir(dataDir), "ca.crt")); err != nil {
				return fmt.Errorf("no cluster CA in %s (has 'berth up' run with this --data-dir?): %w", dataDir, err)
			}
			ca, err := pki.EnsureCA(cluster.PKIDir(dataDir), "berth-ca")
			if err != nil {
				return err
			}
			if server == "" {
				admin, err := clientcmd.LoadFromFile(cluster.AdminKubeconfigPath(dataDir))
				if err != nil {
					return fmt.Errorf("--server not given and no admin kubeconfig to take it from: %w", err)
				}
				for _, c := range admin.Clusters {
					server = c.Server
				}
			}
			data, err := cluster.ClientKubeconfig(ca, server, user, groups)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", cluster.DefaultDataDir(), "data dir of the cluster, whose CA signs the certificate")
	cmd.Flags().StringVar(&user, "user", "", "user name (the certificate's common name)")
	cmd.Flags().StringSliceVar(&groups, "group", nil, "groups of the user (the certificate's organizations); repeatable")
	cmd.Flags().StringVar(&server, "server", "", "API server URL (default: the admin kubeconfig's)")
	_ = cmd.MarkFlagRequired("user")
	return cmd
}

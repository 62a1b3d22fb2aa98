package main

import (
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/controllers"
	"github.com/berth-cluster/berth/pkg/controllers/certificates/csrsigning"
	"github.com/berth-cluster/berth/pkg/controllers/podgc"
)

func newControllersCommand() *cobra.Command {
	var kubeconfigPath string
	var opts controllers.Options
	var podGCThreshold int
	cmd := &cobra.Command{
		Use:   "controllers",
		Short: "Run the controllers (namespaces, service accounts, endpoints, workloads, garbage collection, ...) against an API server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			config, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
			if err != nil {
				return err
			}
			opts.TerminatedPodGCThreshold = &podGCThreshold
			if opts.Identity == "" {
				opts.Identity, _ = os.Hostname()
			}
			ctx, cancel := signalContext()
			defer cancel()
			return controllers.Run(ctx, config, opts)
		},
	}
	cmd.Flags().StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the cluster")
	cmd.Flags().StringVar(&opts.RootCAFile, "root-ca-file", "", "CA bundle published as the kube-root-ca.crt ConfigMap of every namespace (default: the CA of --kubeconfig)")
	cmd.Flags().BoolVar(&opts.LeaderElect, "leader-elect", true, "run only while holding the controllers' Lease, so that several can run")
	cmd.Flags().BoolVar(&opts.UseServiceAccountCredentials, "use-service-account-credentials", false,
		"write with each controller's own service account in kube-system (tokens from TokenRequest), as kube-controller-manager's flag, rather than with the kubeconfig's credentials")
	cmd.Flags().IntVar(&podGCThreshold, "terminated-pod-gc-threshold", podgc.DefaultTerminatedPodThreshold,
		"number of terminated pods that can exist before the terminated pod garbage collector starts deleting them; if <= 0, it deletes none")
	cmd.Flags().StringSliceVar(&opts.Controllers, "controllers", []string{"*"},
		"a list of controllers to enable: '*' enables all, 'foo' enables the controller named 'foo', '-foo' disables it")
	cmd.Flags().StringVar(&opts.ClusterSigningCertFile, "cluster-signing-cert-file", "",
		"PEM-encoded X509 CA certificate used to issue cluster-scoped certificates (the kubernetes.io signers of certificatesigningrequests); without it and --cluster-signing-key-file, CSRs are not signed")
	cmd.Flags().StringVar(&opts.ClusterSigningKeyFile, "cluster-signing-key-file", "",
		"PEM-encoded RSA or ECDSA private key used to sign cluster-scoped certificates")
	cmd.Flags().DurationVar(&opts.ClusterSigningDuration, "cluster-signing-duration", csrsigning.DefaultDuration,
		"the max length of duration signed certificates will be given; individual CSRs may request shorter certs by setting spec.expirationSeconds")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

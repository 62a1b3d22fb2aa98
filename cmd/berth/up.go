package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/apiserver"
	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/controllers"
	"github.com/berth-cluster/berth/pkg/node"
	"github.com/berth-cluster/berth/pkg/scheduler"
	schedconfig "github.com/berth-cluster/berth/pkg/scheduler/config"
)

// controlPlaneFlags are the flags `berth up` and `berth apiserver` share.
type controlPlaneFlags struct {
	dataDir         string
	port            int
	bindAddress     string
	etcdServers     []string
	etcdCAFile      string
	etcdCertFile    string
	etcdKeyFile     string
	etcdClientPort  int
	serviceAccounts serviceAccountFlags
	serviceIPRange  string
	nodePortRange   string
	frontProxy      frontProxyFlags
	// `berth up` only
	schedulerConfig  string
	schedulerAddress string
	runNode          bool
	noControllers    bool
	node             nodeFlags
}

func (f *controlPlaneFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.dataDir, "data-dir", cluster.DefaultDataDir(), "directory for certificates, kubeconfigs and the embedded etcd's data")
	fs.IntVar(&f.port, "port", 6443, "HTTPS port of the API server (0 picks a free port)")
	fs.StringVar(&f.bindAddress, "bind-address", "0.0.0.0", "address the API server listens on")
	fs.StringSliceVar(&f.etcdServers, "etcd-servers", nil, "client URLs of an external etcd (default: run etcd embedded)")
	fs.StringVar(&f.etcdCAFile, "etcd-cafile", "", "CA bundle that verifies the external etcd's certificate")
	fs.StringVar(&f.etcdCertFile, "etcd-certfile", "", "client certificate for the external etcd")
	fs.StringVar(&f.etcdKeyFile, "etcd-keyfile", "", "client key for the external etcd")
	fs.IntVar(&f.etcdClientPort, "etcd-client-port", 2379, "loopback client port of the embedded etcd (0 picks a free port)")
	fs.StringVar(&f.serviceIPRange, "service-cluster-ip-range", apiserver.DefaultServiceClusterIPRange,
		"CIDR (or two, one per IP family, comma-separated) from which Services get their cluster IPs")
	fs.StringVar(&f.nodePortRange, "service-node-port-range", apiserver.DefaultServiceNodePortRange,
		"range of ports NodePort and LoadBalancer Services get their node ports from")
	f.serviceAccounts.add(cmd)
	f.frontProxy.add(cmd)
}

// frontProxyFlags are kube-apiserver's flags for front-proxy authentication and the
// aggregator's client certificate.
type frontProxyFlags apiserver.FrontProxyConfig

func (f *frontProxyFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.RequestHeaderClientCAFile, "requestheader-client-ca-file", "",
		"CA bundle of the front proxies' client certificates, trusted to give the user in the request headers (default: DATA_DIR/pki/front-proxy-ca.crt, made at first start)")
	fs.StringSliceVar(&f.RequestHeaderAllowedNames, "requestheader-allowed-names", nil,
		"common names a front proxy's client certificate may have; empty allows any of the CA's (default with berth's front-proxy CA: front-proxy-client)")
	fs.StringSliceVar(&f.RequestHeaderUsernameHeaders, "requestheader-username-headers", []string{"X-Remote-User"},
		"request headers to take the user name from; the first one set wins")
	fs.StringSliceVar(&f.RequestHeaderGroupHeaders, "requestheader-group-headers", []string{"X-Remote-Group"},
		"request headers to take the groups from")
	fs.StringSliceVar(&f.RequestHeaderExtraHeaderPrefixes, "requestheader-extra-headers-prefix", []string{"X-Remote-Extra-"},
		"prefixes of the request headers to take the user's extra fields from")
	fs.StringVar(&f.ProxyClientCertFile, "proxy-client-cert-file", "",
		"client certificate the aggregator presents to aggregated API servers (default: DATA_DIR/pki/front-proxy-client.crt, made at first start)")
	fs.StringVar(&f.ProxyClientKeyFile, "proxy-client-key-file", "",
		"key of --proxy-client-cert-file")
}

// serviceAccountFlags are kube-apiserver's flags for service-account tokens.
type serviceAccountFlags struct {
	issuers          []string
	signingKeyFile   string
	keyFiles         []string
	jwksURI          string
	apiAudiences     []string
	maxExpiration    time.Duration
	extendExpiration bool
}

func (f *serviceAccountFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringArrayVar(&f.issuers, "service-account-issuer", []string{apiserver.DefaultServiceAccountIssuer},
		"issuer of service-account tokens (their \"iss\" claim); repeat it to accept more: the first issues")
	fs.StringVar(&f.signingKeyFile, "service-account-signing-key-file", "",
		"PEM private key that signs service-account tokens (default: DATA_DIR/pki/sa.key, made at first start)")
	fs.StringArrayVar(&f.keyFiles, "service-account-key-file", nil,
		"PEM file of more public or private keys that verify service-account tokens (earlier signing keys, for rotation); repeatable")
	fs.StringVar(&f.jwksURI, "service-account-jwks-uri", "",
		"jwks_uri of the OpenID discovery document (default: https://ADDRESS:PORT/openid/v1/jwks of this API server)")
	fs.StringSliceVar(&f.apiAudiences, "api-audiences", nil,
		"audiences a token must have to be accepted by the API server (default: the service-account issuers)")
	fs.DurationVar(&f.maxExpiration, "service-account-max-token-expiration", 0,
		"longest lifetime of a requested service-account token (0: no limit)")
	fs.BoolVar(&f.extendExpiration, "service-account-extend-token-expiration", true,
		"give the tokens pods ask for with the default 3607 s a year, with warnafter at 3607 s, as Kubernetes does")
}

func (f *serviceAccountFlags) config() apiserver.ServiceAccountConfig {
	return apiserver.ServiceAccountConfig{
		Issuers:                 f.issuers,
		SigningKeyFile:          f.signingKeyFile,
		KeyFiles:                f.keyFiles,
		JWKSURI:                 f.jwksURI,
		APIAudiences:            f.apiAudiences,
		MaxTokenExpiration:      f.maxExpiration,
		NoExtendTokenExpiration: !f.extendExpiration,
	}
}

func (f *controlPlaneFlags) config() (cluster.Config, error) {
	ip := net.ParseIP(f.bindAddress)
	if ip == nil {
		return cluster.Config{}, fmt.Errorf("--bind-address: %q is not an IP address", f.bindAddress)
	}
	return cluster.Config{
		DataDir:         f.dataDir,
		Port:            f.port,
		BindAddress:     ip,
		EtcdServers:     f.etcdServers,
		EtcdCAFile:      f.etcdCAFile,
		EtcdCertFile:    f.etcdCertFile,
		EtcdKeyFile:     f.etcdKeyFile,
		EtcdClientPort:  f.etcdClientPort,
		ServiceAccounts: f.serviceAccounts.config(),

		ServiceClusterIPRange: f.serviceIPRange,
		ServiceNodePortRange:  f.nodePortRange,
		FrontProxy:            apiserver.FrontProxyConfig(f.frontProxy),
	}, nil
}

func newUpCommand() *cobra.Command {
	var f controlPlaneFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a whole cluster in this process until SIGINT or SIGTERM",
		Long: `up runs a whole cluster in the foreground: etcd (embedded unless --etcd-servers is
given), the Kubernetes API server, the controllers, the scheduler and a node agent (as root).
It writes DATA_DIR/admin.kubeconfig,
which kubectl and client-go use to reach it, and keeps all state in DATA_DIR across restarts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config()
			if err != nil {
				return err
			}
			schedulerConfig, err := schedconfig.Load(f.schedulerConfig)
			if err != nil {
				return err
			}
			// Each part runs as its own identity (system:kube-controller-manager,
			// system:kube-scheduler, system:node:<name>) with only what the bootstrap
			// policy and the node authorizer give it, not as the admin.
			cfg.ComponentIdentities = true
			cfg.Components = []cluster.Component{
				{Name: "scheduler", Identity: cluster.SchedulerIdentity, Run: func(ctx context.Context, config *rest.Config) error {
					// A scheduler that loses its Lease (say, the API server answered its
					// renewal too late) campaigns again, as the controllers do, rather than
					// leaving the cluster without one.
					for {
						err := scheduler.Run(ctx, config, schedulerConfig, scheduler.ServerOptions{Address: f.schedulerAddress, Identity: upIdentity()})
						if ctx.Err() != nil || !errors.Is(err, scheduler.ErrLeaderElectionLost) {
							return err
						}
						klog.FromContext(ctx).Info("The scheduler lost its Lease; campaigning again")
					}
				}},
			}
			if !f.noControllers {
				// A stable identity in the Leases: a restarted `berth up` takes its Leases back at
				// once instead of waiting for its previous self's to expire.
				cfg.Components = append([]cluster.Component{{Name: "controllers", Identity: cluster.ControllerManagerIdentity, Run: func(ctx context.Context, config *rest.Config) error {
					// The cluster CA signs approved CSRs, as kube-controller-manager's
					// --cluster-signing-cert-file in a kubeadm cluster.
					pki := cluster.PKIDir(f.dataDir)
					return controllers.Run(ctx, config, controllers.Options{LeaderElect: true, Identity: upIdentity(), UseServiceAccountCredentials: true,
						ClusterSigningCertFile: filepath.Join(pki, "ca.crt"), ClusterSigningKeyFile: filepath.Join(pki, "ca.key")})
				}}}, cfg.Components...)
			}
			if f.runNode {
				if os.Geteuid() != 0 {
					return fmt.Errorf("the node agent needs root (containerd, cgroups, networking); run as root or pass --node=false")
				}
				nodeConfig, err := f.node.config(filepath.Join(f.dataDir, "node"), cluster.PKIDir(f.dataDir))
				if err != nil {
					return err
				}
				if nodeConfig.ManifestPath == "" {
					nodeConfig.ManifestPath = filepath.Join(f.dataDir, "manifests")
					if err := os.MkdirAll(nodeConfig.ManifestPath, 0o755); err != nil {
						return err
					}
				}
				dnsComponent, clusterDNS, err := clusterDNSComponent(f.serviceIPRange, nodeConfig.PodCIDR)
				if err != nil {
					return err
				}
				// ClusterFirst pods resolve through the kube-dns Service, as on a kubeadm or k3s
				// node; the service proxy routes it, and every Service, to its endpoints.
				if len(nodeConfig.Kubelet.ClusterDNS) == 0 {
					nodeConfig.Kubelet.ClusterDNS = []string{clusterDNS}
				}
				cfg.Components = append(cfg.Components, dnsComponent, serviceProxyComponent(nodeConfig),
					cluster.Component{Name: "node", Identity: cluster.NodeIdentity(nodeConfig.NodeName), Run: func(ctx context.Context, config *rest.Config) error {
						return node.Run(ctx, config, nodeConfig)
					}})
			}
			return runControlPlane(cmd, cfg)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&f.schedulerConfig, "scheduler-config", "", "KubeSchedulerConfiguration file for the scheduler (default: kube-scheduler's defaults)")
	cmd.Flags().StringVar(&f.schedulerAddress, "scheduler-health-address", "127.0.0.1:10259", "address of the scheduler's /healthz and /metrics (empty: none)")
	cmd.Flags().BoolVar(&f.runNode, "node", true, "run a node agent (needs root), so that pods run on this machine")
	cmd.Flags().BoolVar(&f.noControllers, "disable-controller-manager", false, "run no controllers (run berth controllers beside it instead), as k3s's flag")
	f.node.add(cmd, "10.244.0.0/24", "kubelet-config")
	return cmd
}

// runControlPlane runs a control plane until a signal, telling the user how to reach it.
// Its pid file in the data dir lets `berth down` find it.
func runControlPlane(cmd *cobra.Command, cfg cluster.Config) error {
	ctx, cancel := signalContext()
	defer cancel()
	removePIDFile, err := cluster.WritePIDFile(cluster.PIDFilePath(cfg.DataDir))
	if err != nil {
		return err
	}
	defer removePIDFile()
	cp := cluster.New(cfg)
	go func() {
		select {
		case <-cp.Ready():
			fmt.Fprintf(cmd.OutOrStdout(), "berth is up. To use it:\n\n  export KUBECONFIG=%s\n  kubectl get namespaces\n\n",
				cluster.AdminKubeconfigPath(cfg.DataDir))
		case <-ctx.Done():
		}
	}()
	return cp.Run(ctx)
}

// upIdentity names `berth up`'s in-process components in their Leases.
func upIdentity() string {
	host, _ := os.Hostname()
	return host + "_berth-up"
}

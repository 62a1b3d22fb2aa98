package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/node"
)

// nodeFlags are the node agent's flags, shared by `berth node` and `berth up`.
type nodeFlags struct {
	nodeName        string
	nodeIP          string
	podCIDR         string
	runtimeEndpoint string
	manifestPath    string
	manifestURL     string
	kubeletConfig   string
	port            int32
	podLogsDir      string
	bridge          string
	imageGCPeriod   time.Duration
}

func (f *nodeFlags) add(cmd *cobra.Command, defaultPodCIDR, configFlag string) {
	host, _ := os.Hostname()
	fs := cmd.Flags()
	fs.StringVar(&f.nodeName, "node-name", strings.ToLower(host), "name of this node")
	fs.StringVar(&f.nodeIP, "node-ip", "127.0.0.1", "the node's InternalIP, where the API server reaches the node API")
	fs.StringVar(&f.podCIDR, "pod-cidr", defaultPodCIDR, "the pod IP range of this node (empty: the Node's spec.podCIDR)")
	fs.StringVar(&f.runtimeEndpoint, "runtime-endpoint", "", "CRI endpoint (default: the configuration's, else berth's own containerd at DATA_DIR/node/containerd/containerd.sock); berth starts containerd there when nothing answers")
	fs.StringVar(&f.bridge, "bridge", "berth0", "Linux bridge of the pod network, when berth starts containerd (two nodes on one machine need two)")
	fs.StringVar(&f.manifestPath, "pod-manifest-path", "", "directory (or file) of static pod manifests")
	fs.StringVar(&f.manifestURL, "manifest-url", "", "URL of static pod manifests, polled")
	fs.StringVar(&f.kubeletConfig, configFlag, "", "KubeletConfiguration (kubelet.config.k8s.io/v1beta1) file for the node agent")
	fs.Int32Var(&f.port, "node-port", 0, "port of the node API (default: the configuration's, 10250)")
	fs.DurationVar(&f.imageGCPeriod, "image-gc-period", 5*time.Minute, "how often the image garbage collector checks the image filesystem (the kubelet's fixed 5 min)")
	fs.StringVar(&f.podLogsDir, "pod-logs-dir", "", "directory of the pods' container logs (default: the configuration's, /var/log/pods)")
}

// config builds the node agent's configuration; dataDir holds its state and pkiDir the
// cluster CA.
func (f *nodeFlags) config(dataDir, pkiDir string) (node.Config, error) {
	kc, err := node.LoadKubeletConfiguration(f.kubeletConfig)
	if err != nil {
		return node.Config{}, err
	}
	if f.port != 0 {
		kc.Port = f.port
	}
	if f.podLogsDir != "" {
		kc.PodLogsDir = f.podLogsDir
	}
	ip := net.ParseIP(f.nodeIP)
	if ip == nil {
		return node.Config{}, fmt.Errorf("--node-ip: %q is not an IP address", f.nodeIP)
	}
	return node.Config{
		NodeName:        f.nodeName,
		NodeIP:          ip,
		PodCIDR:         f.podCIDR,
		DataDir:         dataDir,
		PKIDir:          pkiDir,
		ManifestPath:    f.manifestPath,
		ManifestURL:     f.manifestURL,
		RuntimeEndpoint: f.runtimeEndpoint,
		Bridge:          f.bridge,
		Kubelet:         kc,
		ImageGCPeriod:   f.imageGCPeriod,
	}, nil
}

func newNodeCommand() *cobra.Command {
	var f nodeFlags
	var kubeconfigPath, dataDir string
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run the node agent (berth's kubelet) against an API server",
		Long: `node runs berth's node agent: it registers the node, keeps its status and Lease, and
runs the pods bound to it on containerd through the CRI (starting containerd itself when
nothing answers on the runtime endpoint). Its state lives in DATA_DIR/node; the node API's
certificate is issued from the cluster CA in DATA_DIR/pki (joining nodes of other machines comes
with a later part). Its kubeconfig should be the node's own identity, which the node authorizer
limits to this node's objects:

  berth kubeconfig --user system:node:NODE --group system:nodes > node.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
			if err != nil {
				return err
			}
			cfg, err := f.config(filepath.Join(dataDir, "node"), cluster.PKIDir(dataDir))
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			// `berth down` finds it by its pid file.
			removePIDFile, err := cluster.WritePIDFile(cluster.NodePIDFilePath(dataDir))
			if err != nil {
				return err
			}
			defer removePIDFile()
			return node.Run(ctx, restConfig, cfg)
		},
	}
	cmd.Flags().StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the cluster")
	cmd.Flags().StringVar(&dataDir, "data-dir", cluster.DefaultDataDir(), "berth's data dir (the node's state in DATA_DIR/node, the cluster CA in DATA_DIR/pki)")
	f.add(cmd, "", "config")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

package main

import (
	"context"
	"net"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/node"
	"github.com/berth-cluster/berth/pkg/proxy"
)

// serviceProxyComponent is berth up's kube-proxy: pkg/proxy for the node of nodeConfig,
// running as system:kube-proxy, as kubeadm's kube-proxy DaemonSet does. Pods' traffic from
// the node's pod CIDR keeps its source; NodePorts answer on every address of the machine
// but loopback, as on k3s; the nftables table is the bridge's own
// (cluster.ServiceProxyTable), so that berth down --cleanup removes it with the bridge.
func serviceProxyComponent(nodeConfig node.Config) cluster.Component {
	cfg := proxy.Config{
		NodeName: nodeConfig.NodeName,
		NodeIPs:  []net.IP{nodeConfig.NodeIP},
		Table:    cluster.ServiceProxyTable(nodeConfig.Bridge),
	}
	if nodeConfig.NodeIP.To4() != nil {
		cfg.NodePortAddresses = []string{"0.0.0.0/0"}
	} else {
		cfg.NodePortAddresses = []string{"::/0"}
	}
	if nodeConfig.PodCIDR != "" {
		cfg.ClusterCIDRs = []string{nodeConfig.PodCIDR}
	}
	return cluster.Component{
		Name:     "proxy",
		Identity: cluster.ServiceProxyIdentity,
		Run: func(ctx context.Context, config *rest.Config) error {
			config = rest.CopyConfig(config)
			config.ContentType = "application/vnd.kubernetes.protobuf"
			config.UserAgent = "berth-proxy/" + nodeConfig.NodeName
			client, err := kubernetes.NewForConfig(config)
			if err != nil {
				return err
			}
			p, err := proxy.New(client, cfg)
			if err != nil {
				return err
			}
			return p.Run(ctx)
		},
	}
}

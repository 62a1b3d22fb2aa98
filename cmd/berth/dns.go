package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/dns"
)

// clusterDNSComponent is berth up's cluster DNS, as kubeadm's CoreDNS addon: the kube-dns
// Service at the service range's tenth address (10.96.0.10 by default), its EndpointSlice
// (this machine's address, port 53, where the server listens) and the server, running as
// kube-system/coredns. It returns the address for the node's clusterDNS: the server's own
// host address for now, which pods reach through their bridge's gateway; the Service's IP
// once the node agent has its service proxy to route it.
func clusterDNSComponent(serviceIPRange string) (cluster.Component, string, error) {
	first := strings.TrimSpace(strings.Split(serviceIPRange, ",")[0])
	prefix, err := netip.ParsePrefix(first)
	if err != nil {
		return cluster.Component{}, "", fmt.Errorf("--service-cluster-ip-range %q: %w", serviceIPRange, err)
	}
	clusterIP := prefix.Masked().Addr()
	for range 10 {
		clusterIP = clusterIP.Next()
	}
	host, err := hostAddress(prefix.Addr().Is4())
	if err != nil {
		return cluster.Component{}, "", err
	}
	listen := net.JoinHostPort(host, "53")
	return cluster.Component{
		Name:     "dns",
		Identity: cluster.DNSIdentity,
		Setup: func(ctx context.Context, admin *rest.Config) error {
			if err := cluster.EnsureDNSAccess(ctx, admin); err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(admin)
			if err != nil {
				return err
			}
			return dns.EnsureService(ctx, client, clusterIP.String(), []string{host})
		},
		Run: func(ctx context.Context, config *rest.Config) error {
			client, err := kubernetes.NewForConfig(config)
			if err != nil {
				return err
			}
			server, err := dns.New(client, dns.Config{Listen: []string{listen}})
			if err != nil {
				return err
			}
			return server.Run(ctx)
		},
	}, host, nil
}

// hostAddress is this machine's first global unicast address of the family: where pods
// reach the DNS server through their bridge's gateway.
func hostAddress(ipv4 bool) (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && (n.IP.To4() != nil) == ipv4 {
			return n.IP.String(), nil
		}
	}
	return "", fmt.Errorf("no global address of the service range's family for the cluster DNS to listen on")
}

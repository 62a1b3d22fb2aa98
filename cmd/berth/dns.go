package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/dns"
)

// clusterDNSComponent is berth up's cluster DNS, as kubeadm's CoreDNS addon: the kube-dns
// Service at the service range's tenth address (10.96.0.10 by default), its EndpointSlice
// (this machine's address, port 53, where the server listens) and the server, running as
// kube-system/coredns. It returns the Service's IP, for the node's clusterDNS; the
// service proxy routes it to the server.
func clusterDNSComponent(serviceIPRange, podCIDR string) (cluster.Component, string, error) {
	first := strings.TrimSpace(strings.Split(serviceIPRange, ",")[0])
	prefix, err := netip.ParsePrefix(first)
	if err != nil {
		return cluster.Component{}, "", fmt.Errorf("--service-cluster-ip-range %q: %w", serviceIPRange, err)
	}
	clusterIP := prefix.Masked().Addr()
	for range 10 {
		clusterIP = clusterIP.Next()
	}
	// The node's pod bridge gateway, the first address of its pod CIDR, is this cluster's
	// alone (several berth ups on one machine each have their own), and every pod reaches it;
	// without a pod CIDR, the machine's address.
	host := ""
	if pod, err := netip.ParsePrefix(podCIDR); err == nil && pod.Addr().Is4() == prefix.Addr().Is4() {
		host = pod.Masked().Addr().Next().String()
	} else if host, err = hostAddress(prefix.Addr().Is4()); err != nil {
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
			// Port 53 of this address may be another berth up's (tests run several on one
			// machine) or another DNS server's: that costs this cluster its DNS, not its
			// readiness. It is tried again every 30 s (a Server runs once: a new one each time).
			for {
				server, err := dns.New(client, dns.Config{Listen: []string{listen}})
				if err != nil {
					return err
				}
				err = server.Run(ctx)
				if ctx.Err() != nil {
					return nil
				}
				if !errors.Is(err, syscall.EADDRINUSE) {
					return err
				}
				klog.FromContext(ctx).Error(err, "The cluster DNS cannot listen: the address is in use; trying again in 30 s", "address", listen)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(30 * time.Second):
				}
			}
		},
	}, clusterIP.String(), nil
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

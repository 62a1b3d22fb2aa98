package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Defaults, kube-proxy's (MinSyncPeriod is its nftables mode's default).
const (
	DefaultMinSyncPeriod = time.Second
	DefaultSyncPeriod    = 30 * time.Second
)

// NodePortAddressesPrimary in Config.NodePortAddresses stands for the node's primary IPs
// (Config.NodeIPs), as kube-proxy's --nodeport-addresses=primary.
const NodePortAddressesPrimary = "primary"

// Config is the service proxy's configuration (kube-proxy's flags of the same meaning).
type Config struct {
	// NodeName is this node's name: endpoints with this nodeName are local, for the Local
	// traffic policies and the hairpin rules; the Node's zone label drives topology hints.
	NodeName string
	// NodeIPs are the node's primary IPs, one per IP family, the node's preferred family
	// first. Required. Their families are the families proxied: ip, and ip6 too when the
	// node is dual-stack.
	NodeIPs []net.IP
	// ClusterCIDRs are the cluster's pod CIDRs (kube-proxy's --cluster-cidr): traffic to a
	// ClusterIP from outside them is masqueraded, and pods' traffic to a NodePort or an
	// external IP of an externalTrafficPolicy Local Service is not subject to the policy.
	// None: no such masquerade, as kube-proxy without a local-traffic detector.
	ClusterCIDRs []string
	// NodePortAddresses are where NodePorts answer: CIDRs (the node's interface addresses
	// inside them, read at each full sync) and/or NodePortAddressesPrimary. A family with a
	// zero CIDR (0.0.0.0/0, ::/0), or with no entry of its own while others have one,
	// answers on every local address (fib daddr type local), as kube-proxy. Loopback
	// addresses never answer (kube-proxy's nftables mode has no localhost NodePorts).
	// Default: primary.
	NodePortAddresses []string
	// MinSyncPeriod is the least time between two syncs, so that a burst of changes makes
	// one (default DefaultMinSyncPeriod).
	MinSyncPeriod time.Duration
	// SyncPeriod is the time between two full syncs, which rewrite every rule and repair
	// anything changed behind the proxy's back (default DefaultSyncPeriod).
	SyncPeriod time.Duration
	// Table is the nftables table the proxy owns, in each family (default TableName). Only
	// one proxy may own a table: two clusters on one machine need two names (and service
	// ranges and node port ranges that do not overlap, since both tables see every packet).
	Table string
}

// familyConfig is Config for one IP family.
type familyConfig struct {
	rules        *familyRules
	nodeIPs      []netip.Addr
	clusterCIDRs []netip.Prefix
	// nodePortAll: NodePorts answer on every local address.
	nodePortAll bool
	// nodePortPrimary: NodePorts answer on nodeIPs; nodePortCIDRs: on the interface
	// addresses inside them.
	nodePortPrimary bool
	nodePortCIDRs   []netip.Prefix
}

// complete fills in the defaults and splits cfg by IP family, the first family first.
func (cfg *Config) complete() ([]*familyConfig, error) {
	if cfg.MinSyncPeriod <= 0 {
		cfg.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if cfg.SyncPeriod <= 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	if cfg.Table == "" {
		cfg.Table = TableName
	}
	if len(cfg.NodePortAddresses) == 0 {
		cfg.NodePortAddresses = []string{NodePortAddressesPrimary}
	}
	var families []*familyConfig
	byFamily := map[v1.IPFamily]*familyConfig{}
	for _, ip := range cfg.NodeIPs {
		a, ok := netip.AddrFromSlice(ip)
		if !ok || !a.Unmap().IsValid() || a.Unmap().IsUnspecified() {
			return nil, fmt.Errorf("node IP %q is not a usable IP", ip)
		}
		a = a.Unmap()
		f := familyOf(a)
		if byFamily[f] != nil {
			return nil, fmt.Errorf("node IPs %v: more than one of family %s", cfg.NodeIPs, f)
		}
		fc := &familyConfig{rules: rulesFor(f), nodeIPs: []netip.Addr{a}}
		byFamily[f] = fc
		families = append(families, fc)
	}
	if len(families) == 0 {
		return nil, errors.New("the service proxy needs the node's IPs (Config.NodeIPs)")
	}
	for _, s := range cfg.ClusterCIDRs {
		for part := range strings.SplitSeq(s, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(part))
			if err != nil {
				return nil, fmt.Errorf("cluster CIDR %q: %w", part, err)
			}
			if fc := byFamily[familyOf(p.Addr())]; fc != nil {
				fc.clusterCIDRs = append(fc.clusterCIDRs, p.Masked())
			}
		}
	}
	hasEntry := map[v1.IPFamily]bool{}
	for _, s := range cfg.NodePortAddresses {
		s = strings.TrimSpace(s)
		if s == NodePortAddressesPrimary {
			for _, fc := range families {
				fc.nodePortPrimary = true
				hasEntry[fc.rules.apiFamily] = true
			}
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("node port address %q: neither %q nor a CIDR: %w", s, NodePortAddressesPrimary, err)
		}
		f := familyOf(p.Addr())
		hasEntry[f] = true
		if fc := byFamily[f]; fc != nil {
			if p.Bits() == 0 {
				fc.nodePortAll = true
			}
			fc.nodePortCIDRs = append(fc.nodePortCIDRs, p.Masked())
		}
	}
	for _, fc := range families {
		if !hasEntry[fc.rules.apiFamily] {
			fc.nodePortAll = true
		}
	}
	return families, nil
}

// nodePortIPs are the addresses NodePorts answer on when not on every local address: the
// primary IPs and the interface addresses inside the CIDRs, without loopback ones, sorted.
func (fc *familyConfig) nodePortIPs(interfaceAddrs []netip.Addr) []netip.Addr {
	var ips []netip.Addr
	if fc.nodePortPrimary {
		ips = append(ips, fc.nodeIPs...)
	}
	for _, a := range interfaceAddrs {
		if slices.ContainsFunc(fc.nodePortCIDRs, func(p netip.Prefix) bool { return p.Contains(a) }) {
			ips = append(ips, a)
		}
	}
	ips = slices.DeleteFunc(ips, func(a netip.Addr) bool { return a.IsLoopback() || familyOf(a) != fc.rules.apiFamily })
	slices.SortFunc(ips, netip.Addr.Compare)
	return slices.Compact(ips)
}

// interfaceAddrs are the addresses of the network namespace's interfaces.
func interfaceAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out, nil
}

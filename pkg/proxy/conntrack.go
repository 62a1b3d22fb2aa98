package proxy

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// udpFlow is what the cleanup looks at of a conntrack entry: where the client sent it
// (the original destination: a service IP or a NodePort) and where the reply comes from
// (the endpoint it was DNATed to).
type udpFlow struct {
	origDst, replySrc netip.AddrPort
}

// conntracker deletes conntrack entries.
type conntracker interface {
	// deleteUDP deletes the UDP entries of family that stale matches and says how many.
	deleteUDP(family v1.IPFamily, stale func(udpFlow) bool) (int, error)
}

// netlinkConntrack is the kernel's conntrack table, through netlink, in the calling
// process's network namespace.
type netlinkConntrack struct{}

func (netlinkConntrack) deleteUDP(family v1.IPFamily, stale func(udpFlow) bool) (int, error) {
	f := netlink.InetFamily(unix.AF_INET)
	if family == v1.IPv6Protocol {
		f = netlink.InetFamily(unix.AF_INET6)
	}
	n, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, f, udpFilter(stale))
	return int(n), err
}

// udpFilter is a netlink conntrack filter matching the UDP entries stale matches.
type udpFilter func(udpFlow) bool

func (stale udpFilter) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	if flow.Forward.Protocol != unix.IPPROTO_UDP {
		return false
	}
	dst, ok1 := netip.AddrFromSlice(flow.Forward.DstIP)
	src, ok2 := netip.AddrFromSlice(flow.Reverse.SrcIP)
	if !ok1 || !ok2 {
		return false
	}
	return stale(udpFlow{
		origDst:  netip.AddrPortFrom(dst.Unmap(), flow.Forward.DstPort),
		replySrc: netip.AddrPortFrom(src.Unmap(), flow.Reverse.SrcPort),
	})
}

// staleUDPFilter matches the UDP entries that send a Service's traffic where it may no
// longer go, as kube-proxy's conntrack reconciler: an entry to a service IP and port, or
// to a NodePort (on one of nodePortIPs, or any address when anyAddress), whose reply comes from
// anything but a serving endpoint of that port (policies, topology and termination set
// aside: an established flow is not moved, as a TCP one is not). A NodePort of a port
// without any serving endpoint is left alone, as the port number alone would match
// flows that are not the Service's. An entry to a frontend in removed (a UDP port gone)
// matches whatever its reply.
func staleUDPFilter(applied map[types.NamespacedName]*servicePlan, removed map[netip.AddrPort]bool, nodePortIPs []netip.Addr, anyAddress bool) func(udpFlow) bool {
	frontends := map[netip.AddrPort][]netip.AddrPort{}
	nodePorts := map[uint16][]netip.AddrPort{}
	for _, plan := range applied {
		for _, u := range plan.udp {
			for _, f := range u.frontends {
				frontends[f] = u.serving
			}
			if u.nodePort != 0 && len(u.serving) > 0 {
				nodePorts[u.nodePort] = u.serving
			}
		}
	}
	removed = maps.Clone(removed)
	return func(f udpFlow) bool {
		if serving, ok := frontends[f.origDst]; ok {
			return !slices.Contains(serving, f.replySrc)
		}
		if removed[f.origDst] {
			return true
		}
		if serving, ok := nodePorts[f.origDst.Port()]; ok {
			if !anyAddress && !slices.Contains(nodePortIPs, f.origDst.Addr()) {
				return false
			}
			return !slices.Contains(serving, f.replySrc)
		}
		return false
	}
}

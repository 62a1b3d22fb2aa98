package memory

import (
	"fmt"
	"net/netip"
	"strings"
)

// DefaultPodCIDR is where sandbox IPs come from until the node agent sets the node's pod
// CIDR with UpdateRuntimeConfig; containerd's default CNI bridge uses it too.
const DefaultPodCIDR = "10.88.0.0/16"

// ipam hands out sandbox IPs as the host-local CNI plugin does: from each pod CIDR (one per
// IP family), skipping the network address, the gateway (.1) and the IPv4 broadcast, round
// robin so that a released address is not reused at once.
type ipam struct {
	pools []ipPool
	used  map[netip.Addr]struct{}
}

type ipPool struct {
	prefix      netip.Prefix
	first, last netip.Addr // the usable range
	cursor      netip.Addr // the address handed out last
}

// setCIDRs replaces the pools with those of cidrs ("10.0.1.0/24" or dual-stack
// "10.0.1.0/24,fd00:1::/64"). Addresses in use stay in use until released.
func (a *ipam) setCIDRs(cidrs string) error {
	var pools []ipPool
	for _, s := range strings.Split(cidrs, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("pod CIDR %q: %w", s, err)
		}
		p = p.Masked()
		first := p.Addr().Next().Next()
		last := lastAddr(p)
		if p.Addr().Is4() {
			last = last.Prev()
		}
		if !first.IsValid() || !last.IsValid() || last.Less(first) {
			return fmt.Errorf("pod CIDR %q has no usable address", s)
		}
		pools = append(pools, ipPool{prefix: p, first: first, last: last, cursor: last})
	}
	a.pools = pools
	if a.used == nil {
		a.used = map[netip.Addr]struct{}{}
	}
	return nil
}

// allocate returns one free address from each pool, the first pool's first.
func (a *ipam) allocate() ([]netip.Addr, error) {
	ips := make([]netip.Addr, 0, len(a.pools))
	for i := range a.pools {
		ip, err := a.pools[i].next(a.used)
		if err != nil {
			a.release(ips)
			return nil, err
		}
		a.used[ip] = struct{}{}
		ips = append(ips, ip)
	}
	return ips, nil
}

func (a *ipam) release(ips []netip.Addr) {
	for _, ip := range ips {
		delete(a.used, ip)
	}
}

// next finds the free address after the one handed out last, wrapping around once.
func (p *ipPool) next(used map[netip.Addr]struct{}) (netip.Addr, error) {
	ip := p.cursor
	for {
		if ip == p.last {
			ip = p.first
		} else {
			ip = ip.Next()
		}
		if _, taken := used[ip]; !taken {
			p.cursor = ip
			return ip, nil
		}
		if ip == p.cursor {
			return netip.Addr{}, fmt.Errorf("no IP address left in pod CIDR %s", p.prefix)
		}
	}
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	bits := p.Bits()
	if p.Addr().Is4() {
		bits += 96
	}
	for i := bits; i < 128; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	last := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		return last.Unmap()
	}
	return last
}

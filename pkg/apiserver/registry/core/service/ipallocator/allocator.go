// Package ipallocator hands out Services' cluster IPs as kube-apiserver v1.33+ does: every
// allocated IP is a networking.k8s.io/v1 IPAddress object named by the IP, whose parentRef is
// the Service. Creating that object is the allocation: etcd refuses a second object of the
// same name, so concurrent creates (here or in another API server) never share an IP, and a
// restart keeps every allocation. The ranges are the --service-cluster-ip-range (the
// "kubernetes" ServiceCIDR) and any other ServiceCIDR users create.
//
// The service registry calls it on the create, update and delete of a Service; the IPAddress
// store is reached in process, not through the loopback client. A dynamic IP is taken from
// the range's upper part first (kube-apiserver's offset: the lower part, where 10.96.0.1 and
// 10.96.0.10 live, stays for IPs users and the cluster ask for), then from the lower part.
package ipallocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerName is the managed-by label value of the IPAddresses the allocator creates.
const ControllerName = "ipallocator.k8s.io"

// Errors as kube-apiserver's allocator words them; the registry puts them in a 422 or a 500.
var (
	ErrFull      = errors.New("range is full")
	ErrAllocated = errors.New("provided IP is already allocated")
)

// ErrNotInRange is a requested IP in no service CIDR.
type ErrNotInRange struct {
	IP         netip.Addr
	ValidRange string
}

func (e *ErrNotInRange) Error() string {
	return fmt.Sprintf("the provided IP (%v) is not in the valid range. The range of valid IPs is %s", e.IP, e.ValidRange)
}

// IPAddresses is the IPAddress store, in process.
type IPAddresses interface {
	// Create stores ip; an existing object of its name is an AlreadyExists error.
	Create(ctx context.Context, ip *networkingv1.IPAddress) error
	// Delete removes the IPAddress name; a missing one is no error.
	Delete(ctx context.Context, name string) error
	// List returns every IPAddress.
	List(ctx context.Context) ([]networkingv1.IPAddress, error)
}

// CIDRSource lists the ServiceCIDRs beyond the flag's that IPs may come from: those that
// exist and are not being deleted.
type CIDRSource interface {
	ServiceCIDRs(ctx context.Context) ([]netip.Prefix, error)
}

// Allocator allocates cluster IPs of every configured family.
type Allocator struct {
	primary []netip.Prefix // the flag's ranges, the first family first
	ips     IPAddresses
	cidrs   CIDRSource

	mu sync.Mutex
	// used caches the IPs known to be allocated, so that a dynamic allocation does not try
	// each one in etcd: filled by the first allocation's List, kept by this allocator's own
	// changes, refreshed by Resync (the repair loop). A stale entry costs a skipped IP, never
	// a double allocation: etcd decides.
	used   map[netip.Addr]bool
	primed bool
	rand   *rand.Rand
}

// New returns an allocator of the ranges primary (one per family, the cluster's default
// family first).
func New(primary []netip.Prefix, ips IPAddresses, cidrs CIDRSource) (*Allocator, error) {
	if len(primary) == 0 || len(primary) > 2 || (len(primary) == 2 && primary[0].Addr().Is4() == primary[1].Addr().Is4()) {
		return nil, fmt.Errorf("service cluster IP ranges %v: want one range, or one of each IP family", primary)
	}
	for _, p := range primary {
		if p.Addr().Is6() && p.Bits() < 64 {
			return nil, fmt.Errorf("shortest allowed prefix length for service CIDR is 64, got %d", p.Bits())
		}
	}
	return &Allocator{primary: primary, ips: ips, cidrs: cidrs, used: map[netip.Addr]bool{},
		rand: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}, nil
}

// Families are the configured IP families, the default first.
func (a *Allocator) Families() []corev1.IPFamily {
	fams := make([]corev1.IPFamily, len(a.primary))
	for i, p := range a.primary {
		fams[i] = familyOf(p.Addr())
	}
	return fams
}

// Has reports whether family is configured.
func (a *Allocator) Has(family corev1.IPFamily) bool {
	for _, p := range a.primary {
		if familyOf(p.Addr()) == family {
			return true
		}
	}
	return false
}

func familyOf(addr netip.Addr) corev1.IPFamily {
	if addr.Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// ranges are the CIDRs of family IPs may come from: the flag's first.
func (a *Allocator) ranges(ctx context.Context, family corev1.IPFamily) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range a.primary {
		if familyOf(p.Addr()) == family {
			out = append(out, p)
		}
	}
	if a.cidrs != nil {
		extra, err := a.cidrs.ServiceCIDRs(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing ServiceCIDRs: %w", err)
		}
		for _, p := range extra {
			if familyOf(p.Addr()) == family && !contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func contains(ps []netip.Prefix, p netip.Prefix) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// Allocate takes ip for svc: it must lie in a service CIDR and be free.
func (a *Allocator) Allocate(ctx context.Context, svc *corev1.Service, ip netip.Addr) error {
	ip = ip.Unmap()
	ranges, err := a.ranges(ctx, familyOf(ip))
	if err != nil {
		return err
	}
	for _, r := range ranges {
		if first, last := bounds(r); ip.Compare(first) >= 0 && ip.Compare(last) <= 0 {
			return a.create(ctx, svc, ip)
		}
	}
	valid := ""
	if len(ranges) > 0 {
		valid = ranges[0].String()
	}
	return &ErrNotInRange{IP: ip, ValidRange: valid}
}

// AllocateNext takes a free IP of family for svc, or fails with ErrFull.
func (a *Allocator) AllocateNext(ctx context.Context, svc *corev1.Service, family corev1.IPFamily) (netip.Addr, error) {
	return a.next(ctx, svc, family, false)
}

// PeekNext is an IP of family AllocateNext could take now, as far as this server knows,
// taking none: what a dry run shows, as kube-apiserver's dry-run allocator does.
func (a *Allocator) PeekNext(ctx context.Context, svc *corev1.Service, family corev1.IPFamily) (netip.Addr, error) {
	return a.next(ctx, svc, family, true)
}

func (a *Allocator) next(ctx context.Context, svc *corev1.Service, family corev1.IPFamily, dryRun bool) (netip.Addr, error) {
	ranges, err := a.ranges(ctx, family)
	if err != nil {
		return netip.Addr{}, err
	}
	if err := a.prime(ctx); err != nil {
		return netip.Addr{}, err
	}
	for _, r := range ranges {
		first, last := bounds(r)
		size := span(first, last)
		if size.Sign() <= 0 {
			continue
		}
		mid := add(first, rangeOffset(r))
		// The upper part, then the lower one.
		for _, part := range [][2]netip.Addr{{mid, last}, {first, prev(mid)}} {
			if part[0].Compare(part[1]) > 0 || !part[0].IsValid() {
				continue
			}
			ip, err := a.allocateIn(ctx, svc, part[0], part[1], dryRun)
			if err == nil || !errors.Is(err, ErrFull) {
				return ip, err
			}
		}
	}
	return netip.Addr{}, ErrFull
}

// allocateIn tries the IPs of [first, last] from a random one on, skipping those known used;
// a dry run returns the first of them without taking it.
func (a *Allocator) allocateIn(ctx context.Context, svc *corev1.Service, first, last netip.Addr, dryRun bool) (netip.Addr, error) {
	n := new(big.Int).Add(span(first, last), big.NewInt(1))
	a.mu.Lock() // a rand.Rand is not safe for concurrent use
	start := add(first, randBelow(a.rand, n))
	a.mu.Unlock()
	ip := start
	for {
		a.mu.Lock()
		used := a.used[ip]
		a.mu.Unlock()
		if !used && dryRun {
			return ip, nil
		}
		if !used {
			switch err := a.create(ctx, svc, ip); {
			case err == nil:
				return ip, nil
			case !errors.Is(err, ErrAllocated):
				return netip.Addr{}, err
			}
		}
		if ip = ip.Next(); !ip.IsValid() || ip.Compare(last) > 0 {
			ip = first
		}
		if ip == start {
			return netip.Addr{}, ErrFull
		}
		if err := ctx.Err(); err != nil {
			return netip.Addr{}, err
		}
	}
}

// create stores the IPAddress of ip with svc as its parent.
func (a *Allocator) create(ctx context.Context, svc *corev1.Service, ip netip.Addr) error {
	obj := &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{
			Name: ip.String(),
			Labels: map[string]string{
				networkingv1.LabelIPAddressFamily: string(familyOf(ip)),
				networkingv1.LabelManagedBy:       ControllerName,
			},
		},
		Spec: networkingv1.IPAddressSpec{ParentRef: ParentRef(svc)},
	}
	err := a.ips.Create(ctx, obj)
	if err == nil || apierrors.IsAlreadyExists(err) {
		a.mu.Lock()
		a.used[ip] = true
		a.mu.Unlock()
	}
	if apierrors.IsAlreadyExists(err) {
		return ErrAllocated
	}
	if err != nil {
		return fmt.Errorf("creating IPAddress %s: %w", ip, err)
	}
	return nil
}

// ParentRef is the reference an IPAddress of svc carries.
func ParentRef(svc *corev1.Service) *networkingv1.ParentReference {
	if svc == nil {
		return nil
	}
	return &networkingv1.ParentReference{Group: "", Resource: "services", Namespace: svc.Namespace, Name: svc.Name}
}

// Release frees ip.
func (a *Allocator) Release(ctx context.Context, ip netip.Addr) error {
	ip = ip.Unmap()
	if err := a.ips.Delete(ctx, ip.String()); err != nil {
		return fmt.Errorf("deleting IPAddress %s: %w", ip, err)
	}
	a.mu.Lock()
	delete(a.used, ip)
	a.mu.Unlock()
	return nil
}

// prime fills the cache of used IPs once.
func (a *Allocator) prime(ctx context.Context) error {
	a.mu.Lock()
	primed := a.primed
	a.mu.Unlock()
	if primed {
		return nil
	}
	return a.Resync(ctx)
}

// Resync refills the cache of used IPs from the store.
func (a *Allocator) Resync(ctx context.Context) error {
	list, err := a.ips.List(ctx)
	if err != nil {
		return fmt.Errorf("listing IPAddresses: %w", err)
	}
	used := make(map[netip.Addr]bool, len(list))
	for _, ip := range list {
		if addr, err := netip.ParseAddr(ip.Name); err == nil {
			used[addr] = true
		}
	}
	a.mu.Lock()
	a.used, a.primed = used, true
	a.mu.Unlock()
	return nil
}

// bounds are the first and last IPs a Service may get in p: not the network address, and for
// IPv4 not the broadcast address either.
func bounds(p netip.Prefix) (first, last netip.Addr) {
	p = p.Masked()
	first = p.Addr().Next()
	bits := p.Addr().BitLen()
	host := new(big.Int).Lsh(big.NewInt(1), uint(bits-p.Bits()))
	host.Sub(host, big.NewInt(1))
	last = add(p.Addr(), host)
	if p.Addr().Is4() {
		last = last.Prev()
	}
	return first, last
}

// span is last - first.
func span(first, last netip.Addr) *big.Int {
	return new(big.Int).Sub(toInt(last), toInt(first))
}

// rangeOffset is kube-apiserver's split of r (KEP-3070): of its 2^hostbits addresses,
// min(max(16, addresses/16), 256) IPs at the bottom are taken dynamically only when the rest
// is full; a prefix of 16 addresses or fewer has no split.
func rangeOffset(r netip.Prefix) *big.Int {
	const min, max, step = 16, 256, 16
	size := new(big.Int).Lsh(big.NewInt(1), uint(r.Addr().BitLen()-r.Bits()))
	if size.Cmp(big.NewInt(min)) <= 0 {
		return big.NewInt(0)
	}
	o := new(big.Int).Div(size, big.NewInt(step))
	switch {
	case o.Cmp(big.NewInt(min)) < 0:
		return big.NewInt(min)
	case o.Cmp(big.NewInt(max)) > 0:
		return big.NewInt(max)
	}
	return o
}

func toInt(a netip.Addr) *big.Int {
	b := a.AsSlice()
	return new(big.Int).SetBytes(b)
}

// add is a + n, or the invalid Addr past the family's end.
func add(a netip.Addr, n *big.Int) netip.Addr {
	v := new(big.Int).Add(toInt(a), n)
	size := a.BitLen() / 8
	if v.Sign() < 0 || v.BitLen() > a.BitLen() {
		return netip.Addr{}
	}
	b := v.FillBytes(make([]byte, size))
	out, _ := netip.AddrFromSlice(b)
	return out
}

func prev(a netip.Addr) netip.Addr {
	if !a.IsValid() {
		return a
	}
	return a.Prev()
}

// randBelow is a uniform random integer in [0, n).
func randBelow(r *rand.Rand, n *big.Int) *big.Int {
	if n.IsUint64() {
		return new(big.Int).SetUint64(r.Uint64N(n.Uint64()))
	}
	// Ranges wider than 64 bits: a random 64-bit offset is random enough.
	return new(big.Int).SetUint64(r.Uint64())
}

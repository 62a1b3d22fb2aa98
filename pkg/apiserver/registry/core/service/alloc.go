package service

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/service/ipallocator"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/service/portallocator"
)

// IPAllocator is what the registry asks of the cluster-IP allocator.
type IPAllocator interface {
	Families() []corev1.IPFamily
	Has(family corev1.IPFamily) bool
	Allocate(ctx context.Context, svc *corev1.Service, ip netip.Addr) error
	AllocateNext(ctx context.Context, svc *corev1.Service, family corev1.IPFamily) (netip.Addr, error)
	// PeekNext is an IP AllocateNext could take, taking none (a dry run).
	PeekNext(ctx context.Context, svc *corev1.Service, family corev1.IPFamily) (netip.Addr, error)
	Release(ctx context.Context, ip netip.Addr) error
}

// PortAllocator is what the registry asks of the node-port allocator.
type PortAllocator interface {
	Allocate(ctx context.Context, port int) error
	AllocateNext(ctx context.Context) (int, error)
	// PeekNext is a port AllocateNext could take, other than skip's, taking none (a dry run).
	PeekNext(ctx context.Context, skip map[int]bool) (int, error)
	Release(ctx context.Context, port int) error
	Has(ctx context.Context, port int) (bool, error)
}

// allocators are the registry's two allocators. Their order of work is kube-apiserver's: a
// create or update allocates before the Service is stored (BeginCreate, BeginUpdate), gives
// back what it took if the write fails, and releases what the Service no longer holds only
// once the write succeeded; a delete releases after the Service is gone. A crash between the
// two leaves a leak the repair loop finds.
type allocators struct {
	ips   IPAllocator
	ports PortAllocator
}

// txn is what one write took and what it will release: revert gives back the taken, commit
// releases the others.
type txn struct {
	a       *allocators
	dryRun  bool
	ips     []netip.Addr // allocated by this write
	ports   []int
	freeIPs []netip.Addr // to release once the write is stored
	free    []int
}

func (t *txn) finish(ctx context.Context, success bool) {
	if t.dryRun {
		return
	}
	ctx = context.WithoutCancel(ctx)
	ips, ports := t.ips, t.ports
	if success {
		ips, ports = t.freeIPs, t.free
	}
	for _, ip := range ips {
		if err := t.a.ips.Release(ctx, ip); err != nil {
			klog.FromContext(ctx).Error(err, "Releasing a cluster IP failed; the repair loop will", "ip", ip)
		}
	}
	for _, p := range ports {
		if err := t.a.ports.Release(ctx, p); err != nil {
			klog.FromContext(ctx).Error(err, "Releasing a node port failed; the repair loop will", "port", p)
		}
	}
}

// allocateCreate fills in a new Service's IP families, cluster IPs, node ports and health
// check node port.
func (a *allocators) allocateCreate(ctx context.Context, svc *corev1.Service, dryRun bool) (*txn, error) {
	t := &txn{a: a, dryRun: dryRun}
	if err := a.initIPFamilyFields(svc, nil); err != nil {
		return nil, err
	}
	if err := a.allocClusterIPs(ctx, t, svc, svc.Spec.IPFamilies); err != nil {
		t.finish(ctx, false)
		return nil, err
	}
	if err := a.allocNodePorts(ctx, t, svc, nil); err != nil {
		t.finish(ctx, false)
		return nil, err
	}
	return t, nil
}

// allocateUpdate does the same for an update: a type change to or from ExternalName, a
// second family added or dropped, node ports added, changed or dropped.
func (a *allocators) allocateUpdate(ctx context.Context, svc, old *corev1.Service, dryRun bool) (*txn, error) {
	t := &txn{a: a, dryRun: dryRun}
	if err := a.initIPFamilyFields(svc, old); err != nil {
		return nil, err
	}
	if err := a.updateClusterIPs(ctx, t, svc, old); err != nil {
		t.finish(ctx, false)
		return nil, err
	}
	if err := a.allocNodePorts(ctx, t, svc, old); err != nil {
		t.finish(ctx, false)
		return nil, err
	}
	return t, nil
}

// releaseAll frees what a deleted Service held.
func (a *allocators) releaseAll(ctx context.Context, svc *corev1.Service) {
	t := &txn{a: a}
	if needsClusterIP(svc) {
		for _, s := range svc.Spec.ClusterIPs {
			if ip, err := netip.ParseAddr(s); err == nil {
				t.freeIPs = append(t.freeIPs, ip)
			}
		}
	}
	t.free = nodePorts(svc)
	t.finish(ctx, true)
}

// needsClusterIP: every type but ExternalName, and not headless.
func needsClusterIP(svc *corev1.Service) bool {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return false
	}
	return len(svc.Spec.ClusterIPs) == 0 || svc.Spec.ClusterIPs[0] != corev1.ClusterIPNone
}

func otherFamily(f corev1.IPFamily) corev1.IPFamily {
	if f == corev1.IPv4Protocol {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

func familyOf(ip string) corev1.IPFamily {
	if addr, err := netip.ParseAddr(ip); err == nil && addr.Is6() && !addr.Is4In6() {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// normalizeClusterIPs keeps clusterIP and clusterIPs in step when a client wrote only the
// old singular field (kube-apiserver's rules).
func normalizeClusterIPs(svc, old *corev1.Service) {
	if old == nil {
		if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
		return
	}
	// An update that left clusterIPs out but kept clusterIP keeps the old list.
	if len(old.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) == 0 && old.Spec.ClusterIP == svc.Spec.ClusterIP {
		svc.Spec.ClusterIPs = old.Spec.ClusterIPs
	}
	if old.Spec.ClusterIP != svc.Spec.ClusterIP && sameStrings(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIPs = nil
		} else {
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
	}
}

// patchAllocatedValues carries the old Service's allocations into an update that did not
// name them (a `kubectl apply` of a manifest without clusterIP or nodePort).
func patchAllocatedValues(svc, old *corev1.Service) {
	if needsClusterIP(old) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
	}
	if needsNodePort(old) && needsNodePort(svc) {
		used := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				used[p.NodePort] = true
			}
		}
		for i := range svc.Spec.Ports {
			np := &svc.Spec.Ports[i]
			if np.NodePort != 0 {
				continue
			}
			// The old port of the same number and protocol (or name), if its node port is not
			// taken by another entry now.
			for _, op := range old.Spec.Ports {
				if op.NodePort != 0 && op.Port == np.Port && op.Protocol == np.Protocol && !used[op.NodePort] {
					np.NodePort = op.NodePort
					used[op.NodePort] = true
					break
				}
			}
		}
	}
	if needsHealthCheck(old) && needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

func needsNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// needsHealthCheck: a LoadBalancer Service with externalTrafficPolicy Local.
func needsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// shouldAllocateNodePorts: NodePort always, LoadBalancer unless allocateLoadBalancerNodePorts
// is false.
func shouldAllocateNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

func invalid(svc *corev1.Service, errs field.ErrorList) error {
	return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
}

// initIPFamilyFields defaults ipFamilyPolicy and ipFamilies, and checks them against the
// families the cluster has, as kube-apiserver does before it allocates.
func (a *allocators) initIPFamilyFields(svc, old *corev1.Service) error {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	// An update that only leaves the defaults of a PreferDualStack Service out changes nothing.
	if old != nil && preferDualStackUnchanged(svc, old) {
		return nil
	}
	policyPath, familiesPath := field.NewPath("spec", "ipFamilyPolicy"), field.NewPath("spec", "ipFamilies")
	if svc.Spec.IPFamilyPolicy == nil {
		var p corev1.IPFamilyPolicy
		switch {
		case old != nil && old.Spec.IPFamilyPolicy != nil:
			p = *old.Spec.IPFamilyPolicy
		case svc.Spec.ClusterIP == corev1.ClusterIPNone && len(svc.Spec.Selector) == 0:
			// A headless Service without selector may have endpoints of both families.
			p = corev1.IPFamilyPolicyRequireDualStack
		default:
			p = corev1.IPFamilyPolicySingleStack
		}
		svc.Spec.IPFamilyPolicy = &p
	}
	if errs := ValidateServiceClusterIPsRelatedFields(svc, old); len(errs) > 0 {
		return invalid(svc, errs)
	}
	policy := *svc.Spec.IPFamilyPolicy
	var errs field.ErrorList
	if old != nil {
		if policy == corev1.IPFamilyPolicySingleStack {
			// Downgrading to single-stack: the secondary IP and family go.
			if sameStrings(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) && len(svc.Spec.ClusterIPs) > 1 {
				svc.Spec.ClusterIPs = svc.Spec.ClusterIPs[:1]
			}
			if sameFamilies(old.Spec.IPFamilies, svc.Spec.IPFamilies) && len(svc.Spec.IPFamilies) > 1 {
				svc.Spec.IPFamilies = svc.Spec.IPFamilies[:1]
			}
		} else {
			if len(svc.Spec.ClusterIPs) < len(old.Spec.ClusterIPs) && len(svc.Spec.ClusterIPs) > 0 {
				errs = append(errs, field.Invalid(policyPath, policy, "must be 'SingleStack' to release the secondary cluster IP"))
			}
			if len(svc.Spec.IPFamilies) < len(old.Spec.IPFamilies) && len(svc.Spec.IPFamilies) > 0 {
				errs = append(errs, field.Invalid(policyPath, policy, "must be 'SingleStack' to release the secondary IP family"))
			}
		}
	}
	if policy == corev1.IPFamilyPolicySingleStack {
		if len(svc.Spec.ClusterIPs) == 2 {
			errs = append(errs, field.Invalid(policyPath, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
		if len(svc.Spec.IPFamilies) == 2 {
			errs = append(errs, field.Invalid(policyPath, policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		}
	}
	// Families follow the IPs the client asked for.
	for i, ip := range svc.Spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		if i >= len(svc.Spec.IPFamilies) {
			fam := familyOf(ip)
			if !a.ips.Has(fam) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), svc.Spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", fam)))
			} else {
				svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, fam)
			}
		}
	}
	if len(errs) > 0 {
		return invalid(svc, errs)
	}
	families := a.ips.Families()
	if svc.Spec.ClusterIP == corev1.ClusterIPNone && len(svc.Spec.Selector) == 0 {
		// Headless without selector: its families are not checked against the cluster's.
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = []corev1.IPFamily{families[0]}
		}
		if len(svc.Spec.IPFamilies) < 2 && policy != corev1.IPFamilyPolicySingleStack {
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, otherFamily(svc.Spec.IPFamilies[0]))
		}
		return nil
	}
	if policy == corev1.IPFamilyPolicyRequireDualStack && len(families) < 2 {
		errs = append(errs, field.Invalid(policyPath, policy, "this cluster is not configured for dual-stack services"))
	}
	for i, fam := range svc.Spec.IPFamilies {
		if !a.ips.Has(fam) {
			errs = append(errs, field.Invalid(familiesPath.Index(i), fam, "not configured on this cluster"))
		}
	}
	if len(errs) > 0 {
		return invalid(svc, errs)
	}
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = []corev1.IPFamily{families[0]}
	}
	if policy != corev1.IPFamilyPolicySingleStack && len(svc.Spec.IPFamilies) == 1 && len(families) == 2 {
		svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, otherFamily(svc.Spec.IPFamilies[0]))
	}
	return nil
}

// preferDualStackUnchanged: an update of a PreferDualStack Service (of a type with cluster
// IPs) that keeps its type, cluster IPs and families changes no allocation: the cluster may
// have gained a family since, and such a Service is not upgraded by an unrelated write.
func preferDualStackUnchanged(svc, old *corev1.Service) bool {
	if svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyPreferDualStack ||
		(old.Spec.IPFamilyPolicy != nil && *old.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyPreferDualStack) {
		return false
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		return false
	}
	return old.Spec.Type == svc.Spec.Type && sameStrings(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) &&
		sameFamilies(old.Spec.IPFamilies, svc.Spec.IPFamilies)
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameFamilies(a, b []corev1.IPFamily) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// allocClusterIPs gives svc an IP of each of families it has no IP for yet (or the one it
// asked for), from clusterIPs' index on.
func (a *allocators) allocClusterIPs(ctx context.Context, t *txn, svc *corev1.Service, families []corev1.IPFamily) error {
	if !needsClusterIP(svc) {
		return nil
	}
	for i, fam := range svc.Spec.IPFamilies {
		if !containsFamily(families, fam) {
			continue
		}
		for len(svc.Spec.ClusterIPs) <= i {
			svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, "")
		}
		want := svc.Spec.ClusterIPs[i]
		var ip netip.Addr
		if want == "" {
			allocateNext := a.ips.AllocateNext
			if t.dryRun {
				allocateNext = a.ips.PeekNext // shown, not taken
			}
			got, err := allocateNext(ctx, svc, fam)
			if err != nil {
				if errors.Is(err, ipallocator.ErrFull) {
					return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP for Service %q: %w", svc.Name, err))
				}
				return invalid(svc, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP: %v", err))})
			}
			ip = got
		} else {
			parsed, err := netip.ParseAddr(want)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to parse service IP %q", want))
			}
			if !t.dryRun {
				if err := a.ips.Allocate(ctx, svc, parsed); err != nil {
					return invalid(svc, field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %v: %v", want, err))})
				}
			}
			ip = parsed
		}
		if !t.dryRun {
			t.ips = append(t.ips, ip)
		}
		svc.Spec.ClusterIPs[i] = ip.String()
		if i == 0 {
			svc.Spec.ClusterIP = ip.String()
		}
	}
	return nil
}

func containsFamily(fs []corev1.IPFamily, f corev1.IPFamily) bool {
	for _, g := range fs {
		if g == f {
			return true
		}
	}
	return false
}

// updateClusterIPs allocates or releases cluster IPs for an update.
func (a *allocators) updateClusterIPs(ctx context.Context, t *txn, svc, old *corev1.Service) error {
	if preferDualStackUnchanged(svc, old) {
		return nil
	}
	switch {
	case old.Spec.Type == corev1.ServiceTypeExternalName && svc.Spec.Type != corev1.ServiceTypeExternalName:
		return a.allocClusterIPs(ctx, t, svc, svc.Spec.IPFamilies)
	case len(old.Spec.ClusterIPs) > 0 && old.Spec.ClusterIPs[0] == corev1.ClusterIPNone:
		return nil // headless stays headless (validation refuses a change)
	case old.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.Type == corev1.ServiceTypeExternalName:
		for _, s := range old.Spec.ClusterIPs {
			if ip, err := netip.ParseAddr(s); err == nil && !t.dryRun {
				t.freeIPs = append(t.freeIPs, ip)
			}
		}
		return nil
	}
	switch {
	case len(old.Spec.IPFamilies) == 1 && len(svc.Spec.IPFamilies) == 2: // upgraded
		return a.allocClusterIPs(ctx, t, svc, svc.Spec.IPFamilies[1:])
	case len(old.Spec.IPFamilies) == 2 && len(svc.Spec.IPFamilies) == 1: // downgraded
		if len(old.Spec.ClusterIPs) > 1 && !t.dryRun {
			if ip, err := netip.ParseAddr(old.Spec.ClusterIPs[1]); err == nil {
				t.freeIPs = append(t.freeIPs, ip)
			}
		}
	}
	return nil
}

// nodePorts are the node ports svc holds, its health check node port included.
func nodePorts(svc *corev1.Service) []int {
	var ports []int
	seen := map[int]bool{}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !seen[int(p.NodePort)] {
			seen[int(p.NodePort)] = true
			ports = append(ports, int(p.NodePort))
		}
	}
	if needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort != 0 && !seen[int(svc.Spec.HealthCheckNodePort)] {
		ports = append(ports, int(svc.Spec.HealthCheckNodePort))
	}
	return ports
}

// allocNodePorts gives svc's ports the node ports they need (the requested one, or a free
// one; entries of the same port number share one, as for TCP and UDP of DNS), and the
// health check node port; ports old held that svc no longer does are released on commit.
func (a *allocators) allocNodePorts(ctx context.Context, t *txn, svc, old *corev1.Service) error {
	held := map[int]bool{}
	if old != nil {
		for _, p := range nodePorts(old) {
			held[p] = true
		}
	}
	taken := map[int]bool{} // by this write, or kept from old
	allocate := func(port int) error {
		if held[port] || taken[port] {
			taken[port] = true
			return nil
		}
		if t.dryRun {
			if has, err := a.ports.Has(ctx, port); err != nil {
				return err
			} else if has {
				return portallocator.ErrAllocated
			}
		} else if err := a.ports.Allocate(ctx, port); err != nil {
			return err
		}
		taken[port] = true
		if !t.dryRun {
			t.ports = append(t.ports, port)
		}
		return nil
	}
	next := func() (int, error) {
		if t.dryRun {
			port, err := a.ports.PeekNext(ctx, taken) // shown, not taken
			if err == nil {
				taken[port] = true
			}
			return port, err
		}
		port, err := a.ports.AllocateNext(ctx)
		if err != nil {
			return 0, err
		}
		taken[port] = true
		t.ports = append(t.ports, port)
		return port, nil
	}

	if needsNodePort(svc) {
		byPort := map[int32]int32{} // service port → its node port, shared across protocols
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			if sp.NodePort == 0 && !shouldAllocateNodePorts(svc) {
				continue
			}
			path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
			if sp.NodePort == 0 {
				if np, ok := byPort[sp.Port]; ok && old == nil {
					sp.NodePort = np
					continue
				}
				if np := requestedNodePort(sp.Port, svc.Spec.Ports); np != 0 && old == nil {
					sp.NodePort = np
				} else {
					port, err := next()
					if err != nil {
						return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
					}
					sp.NodePort = int32(port)
					byPort[sp.Port] = sp.NodePort
					continue
				}
			}
			if err := allocate(int(sp.NodePort)); err != nil {
				return invalid(svc, field.ErrorList{field.Invalid(path, sp.NodePort, err.Error())})
			}
			byPort[sp.Port] = sp.NodePort
		}
	}
	if needsHealthCheck(svc) {
		if svc.Spec.HealthCheckNodePort != 0 {
			if err := allocate(int(svc.Spec.HealthCheckNodePort)); err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %v", svc.Spec.HealthCheckNodePort, err))
			}
		} else {
			port, err := next()
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a HealthCheck NodePort %v: %v", port, err))
			}
			svc.Spec.HealthCheckNodePort = int32(port)
		}
	}
	for p := range held {
		if !taken[p] && !t.dryRun {
			t.free = append(t.free, p)
		}
	}
	return nil
}

// requestedNodePort is the node port another entry of the same port number asked for.
func requestedNodePort(port int32, ports []corev1.ServicePort) int32 {
	for _, p := range ports {
		if p.Port == port && p.NodePort != 0 {
			return p.NodePort
		}
	}
	return 0
}

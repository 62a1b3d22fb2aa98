package service

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/service/ipallocator"
)

// RepairInterval is how often the repair loop runs (kube-apiserver's 3 minutes).
const RepairInterval = 3 * time.Minute

// leakRounds is how many repairs in a row must find an IPAddress whose Service does not hold
// it before it is deleted: a create allocates before it stores the Service.
const leakRounds = 3

// Repairer is the allocations' repair loop, kube-apiserver's repair controllers for cluster
// IPs and node ports: allocations lost or leaked by a crash between an allocation and the
// Service's write (or by a restore of etcd) are put right.
type Repairer struct {
	Services func(ctx context.Context) ([]corev1.Service, error)
	IPs      ipallocator.IPAddresses
	Create   func(ctx context.Context, svc *corev1.Service, ip netip.Addr) error // an IPAddress for svc
	Resync   func(ctx context.Context) error                                     // the IP allocator's cache
	Ports    interface {
		Repair(ctx context.Context, inUse []int, leaks map[int]int) ([]int, error)
	}

	ipLeaks   map[string]int
	portLeaks map[int]int
}

// Run repairs at once, then every interval, until ctx ends.
func (r *Repairer) Run(ctx context.Context, interval time.Duration) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := r.RepairOnce(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Repairing the Service allocations failed; retrying", "interval", interval)
		}
	}, interval)
}

// RepairOnce makes the IPAddresses and the node-port bitmap agree with the Services.
func (r *Repairer) RepairOnce(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if r.ipLeaks == nil {
		r.ipLeaks, r.portLeaks = map[string]int{}, map[int]int{}
	}
	svcs, err := r.Services(ctx)
	if err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	ips, err := r.IPs.List(ctx)
	if err != nil {
		return fmt.Errorf("listing IPAddresses: %w", err)
	}
	stored := map[string]*networkingv1.IPAddress{}
	for i := range ips {
		stored[ips[i].Name] = &ips[i]
	}
	held := map[string]bool{}
	var ports []int
	for i := range svcs {
		svc := &svcs[i]
		ports = append(ports, nodePorts(svc)...)
		if !needsClusterIP(svc) {
			continue
		}
		for _, s := range svc.Spec.ClusterIPs {
			ip, err := netip.ParseAddr(s)
			if err != nil {
				continue
			}
			name := ip.String()
			held[name] = true
			if _, ok := stored[name]; ok {
				continue
			}
			logger.Info("Cluster IP not allocated; allocating it", "service", klog.KObj(svc), "ip", name)
			if err := r.Create(ctx, svc, ip); err != nil {
				logger.Error(err, "Allocating a Service's cluster IP failed", "service", klog.KObj(svc), "ip", name)
			}
		}
	}
	for name, ip := range stored {
		if held[name] || ip.Labels[networkingv1.LabelManagedBy] != ipallocator.ControllerName {
			delete(r.ipLeaks, name)
			continue
		}
		if r.ipLeaks[name]++; r.ipLeaks[name] < leakRounds {
			continue
		}
		logger.Info("Releasing a leaked cluster IP", "ip", name, "parent", ip.Spec.ParentRef)
		if err := r.IPs.Delete(ctx, name); err != nil {
			logger.Error(err, "Releasing a leaked cluster IP failed", "ip", name)
			continue
		}
		delete(r.ipLeaks, name)
	}
	for name := range r.ipLeaks {
		if _, ok := stored[name]; !ok {
			delete(r.ipLeaks, name)
		}
	}
	if r.Resync != nil {
		if err := r.Resync(ctx); err != nil {
			return err
		}
	}
	missing, err := r.Ports.Repair(ctx, ports, r.portLeaks)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		logger.Info("Node ports held by Services were not allocated; allocated them", "ports", missing)
	}
	return nil
}

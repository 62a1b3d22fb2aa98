package proxy

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/knftables"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// Component names the proxy in logs and in berth_recovered_panics_total.
const Component = "proxy"

// labelServiceProxyName marks a Service (and its slices) that another proxy serves.
const labelServiceProxyName = "service.kubernetes.io/service-proxy-name"

// Proxier is the node agent's service proxy. Make it with New and run it with Run.
type Proxier struct {
	cfg      Config
	families []*familyProxier
	tracker  *changeTracker
	metrics  *Metrics

	services, slices, node cache.SharedIndexInformer

	// trigger holds a wake-up for the sync loop when something changed.
	trigger chan struct{}
	running atomic.Bool
	synced  atomic.Bool

	mu sync.Mutex
	// zone is the node's topology.kubernetes.io/zone; zoneChanged asks for a full sync.
	zone        string
	zoneChanged bool
}

// New makes the service proxy of the node cfg describes, with its own informers of
// client's Services, EndpointSlices and (for topology hints) Node. It fails when cfg is
// wrong or nft cannot be run.
func New(client kubernetes.Interface, cfg Config) (*Proxier, error) {
	fcs, err := cfg.complete()
	if err != nil {
		return nil, err
	}
	nfts := make([]knftables.Interface, len(fcs))
	for i, fc := range fcs {
		if nfts[i], err = knftables.New(fc.rules.family, cfg.Table); err != nil {
			return nil, fmt.Errorf("service proxy: %w", err)
		}
	}
	return newProxier(client, cfg, fcs, nfts, netlinkConntrack{}), nil
}

// newProxier is New with the nftables of each family and the conntrack table given.
func newProxier(client kubernetes.Interface, cfg Config, fcs []*familyConfig, nfts []knftables.Interface, ct conntracker) *Proxier {
	p := &Proxier{cfg: cfg, metrics: newMetrics(), trigger: make(chan struct{}, 1)}
	var families []v1.IPFamily
	for i, fc := range fcs {
		p.families = append(p.families, newFamilyProxier(fc, nfts[i], ct))
		families = append(families, fc.rules.apiFamily)
	}
	p.tracker = newChangeTracker(families, cfg.NodeName)
	p.tracker.notify = p.notify
	p.tracker.skipped = p.metrics.skipped

	// As kube-proxy: not the Services another proxy serves, nor headless ones' slices.
	noProxyName, _ := labels.NewRequirement(labelServiceProxyName, selection.DoesNotExist, nil)
	noHeadless, _ := labels.NewRequirement(v1.IsHeadlessService, selection.DoesNotExist, nil)
	selector := labels.NewSelector().Add(*noProxyName, *noHeadless).String()
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = selector }
	p.services = coreinformers.NewFilteredServiceInformer(client, metav1.NamespaceAll, 0, cache.Indexers{}, tweak)
	p.slices = discoveryinformers.NewFilteredEndpointSliceInformer(client, metav1.NamespaceAll, 0, cache.Indexers{}, tweak)
	if cfg.NodeName != "" {
		p.node = coreinformers.NewFilteredNodeInformer(client, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector(metav1.ObjectNameField, cfg.NodeName).String()
		})
	}
	return p
}

// Collectors are the proxy's metrics, to register with the node API's registry.
func (p *Proxier) Collectors() []prometheus.Collector { return p.metrics.Collectors() }

// HasSynced says whether the rules were fully written once since Run began: every Service
// and EndpointSlice listed at the start is programmed.
func (p *Proxier) HasSynced() bool { return p.synced.Load() }

func (p *Proxier) notify() {
	select {
	case p.trigger <- struct{}{}:
	default:
	}
}

// Run runs the informers and the sync loop until ctx ends, and waits for them. The rules
// stay in the kernel when it returns (traffic keeps flowing across a restart of the node
// agent); Cleanup removes them.
func (p *Proxier) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("the service proxy was already run: make a new one")
	}
	logger := klog.FromContext(ctx).WithValues("component", Component)
	ctx = klog.NewContext(ctx, logger)

	svcReg, err := p.services.AddEventHandler(p.tracker.serviceHandlers(logger))
	if err != nil {
		return err
	}
	sliceReg, err := p.slices.AddEventHandler(p.tracker.sliceHandlers(logger))
	if err != nil {
		return err
	}
	informers := []cache.SharedIndexInformer{p.services, p.slices}
	if p.node != nil {
		if _, err := p.node.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { p.nodeChanged(ctx, obj, false) },
			UpdateFunc: func(_, obj any) { p.nodeChanged(ctx, obj, false) },
			DeleteFunc: func(obj any) { p.nodeChanged(ctx, obj, true) },
		}); err != nil {
			return err
		}
		informers = append(informers, p.node)
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	for _, inf := range informers {
		// An informer cannot run twice: after a panic the proxy keeps what it last saw.
		wg.Go(func() { _ = panics.Call(ctx, Component, func() error { inf.RunWithContext(ctx); return nil }) })
	}
	// No rules from a partial view: wait for the first lists (the Node may not exist yet).
	if !cache.WaitForCacheSync(ctx.Done(), svcReg.HasSynced, sliceReg.HasSynced) {
		return nil
	}
	logger.Info("Starting the service proxy", "table", p.cfg.Table, "families", len(p.families), "minSyncPeriod", p.cfg.MinSyncPeriod, "syncPeriod", p.cfg.SyncPeriod)
	p.warnBridgeNetfilter(logger)
	p.syncLoop(ctx)
	return nil
}

func (p *Proxier) nodeChanged(ctx context.Context, obj any, deleted bool) {
	_ = panics.Call(ctx, Component, func() error {
		node, ok := tombstone(obj).(*v1.Node)
		if !ok {
			return nil
		}
		zone := ""
		if !deleted {
			zone = node.Labels[v1.LabelTopologyZone]
		}
		p.mu.Lock()
		changed := zone != p.zone
		if changed {
			p.zone, p.zoneChanged = zone, true
		}
		p.mu.Unlock()
		if changed {
			klog.FromContext(ctx).V(2).Info("The node's zone changed", "zone", zone)
			p.notify()
		}
		return nil
	})
}

// schedule decides when the sync loop syncs (kube-proxy's bounded-frequency runner): at
// once the first time; after a change, no sooner than minPeriod after the last sync; a
// full sync every period; after a failure, a full sync after a back-off of a second
// doubling up to period. It does no I/O.
type schedule struct {
	minPeriod, period  time.Duration
	lastRun, lastFull  time.Time
	pending            bool
	failures           int
	retryAt            time.Time
	neverSynced        bool
	lastFailureBackoff time.Duration
}

func newSchedule(minPeriod, period time.Duration) *schedule {
	return &schedule{minPeriod: minPeriod, period: period, neverSynced: true}
}

// next is when the next sync is due.
func (s *schedule) next() time.Time {
	switch {
	case s.failures > 0:
		return s.retryAt
	case s.neverSynced:
		return time.Time{}
	}
	due := s.lastFull.Add(s.period)
	if s.pending {
		if d := s.lastRun.Add(s.minPeriod); d.Before(due) {
			due = d
		}
	}
	return due
}

// full says whether a sync at now rewrites everything.
func (s *schedule) full(now time.Time) bool {
	return s.neverSynced || s.failures > 0 || !now.Before(s.lastFull.Add(s.period))
}

// done records a sync that began at start.
func (s *schedule) done(start time.Time, full, ok bool) {
	s.lastRun = start
	if ok {
		s.failures, s.lastFailureBackoff = 0, 0
		if full {
			s.lastFull, s.neverSynced = start, false
		}
		return
	}
	s.failures++
	s.lastFailureBackoff = min(max(2*s.lastFailureBackoff, time.Second), s.period)
	s.retryAt = start.Add(s.lastFailureBackoff)
}

func (p *Proxier) syncLoop(ctx context.Context) {
	s := newSchedule(p.cfg.MinSyncPeriod, p.cfg.SyncPeriod)
	for {
		timer := time.NewTimer(max(time.Until(s.next()), 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-p.trigger:
			timer.Stop()
			s.pending = true
			continue
		case <-timer.C:
		}
		start := time.Now()
		full := s.full(start) || p.needsFull()
		s.pending = false
		ok := p.syncOnce(ctx, full)
		s.done(start, full, ok)
	}
}

// needsFull says whether a family's state is not to be trusted, or the zone changed.
func (p *Proxier) needsFull() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.families {
		if f.needFull {
			return true
		}
	}
	return p.zoneChanged
}

// syncOnce syncs, recovering a panic: a sync that panics or fails is logged (with the
// panic's stack), counted, and retried as a full sync after the back-off.
func (p *Proxier) syncOnce(ctx context.Context, full bool) bool {
	err := panics.Call(ctx, Component, func() error { return p.syncProxyRules(ctx, full) })
	if err == nil {
		return true
	}
	var pe *panics.Error
	if errors.As(err, &pe) {
		// The panic may have left any family's state half-written.
		for _, f := range p.families {
			f.needFull = true
			p.metrics.syncFailed(f.fc.rules.apiFamily)
		}
	}
	klog.FromContext(ctx).Error(err, "Syncing the service rules failed; retrying with a full sync", "full", full)
	return false
}

// syncProxyRules writes the rules of what changed (everything, when full) into each
// family's table.
func (p *Proxier) syncProxyRules(ctx context.Context, full bool) error {
	p.mu.Lock()
	zone := p.zone
	p.zoneChanged = false
	p.mu.Unlock()
	inputs := p.tracker.checkout(full)
	var errs []error
	for _, f := range p.families {
		start := time.Now()
		pl := &planner{fam: f.fc.rules, nodeName: p.cfg.NodeName, zone: zone, nodeIPs: f.fc.nodeIPs, clusterCIDRs: f.fc.clusterCIDRs}
		stats, err := f.sync(ctx, inputs, full, pl)
		elapsed := time.Since(start)
		p.metrics.observeSync(f.fc.rules.apiFamily, stats.full, elapsed, err == nil, stats.conntrackDeleted)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		klog.FromContext(ctx).V(2).Info("Synced the service rules", "family", f.fc.rules.family, "full", stats.full,
			"services", stats.services, "changed", stats.changed, "operations", stats.operations,
			"conntrackDeleted", stats.conntrackDeleted, "elapsed", elapsed)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if full {
		p.synced.Store(true)
	}
	return nil
}

// Cleanup deletes the proxy's table (Config.Table; "" is TableName) in both families
// (berth down --cleanup). A table that is not there is no error.
func Cleanup(ctx context.Context, table string) error {
	if table == "" {
		table = TableName
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return nil // no nft, no proxy ever ran here
	}
	var errs []error
	for _, family := range []knftables.Family{knftables.IPv4Family, knftables.IPv6Family} {
		nft, err := knftables.New(family, table)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := cleanupTable(ctx, nft); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func cleanupTable(ctx context.Context, nft knftables.Interface) error {
	tx := nft.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := nft.Run(ctx, tx); err != nil && !knftables.IsNotFound(err) {
		return fmt.Errorf("deleting the service proxy's table: %w", err)
	}
	return nil
}

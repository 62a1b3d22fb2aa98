package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/knftables"
)

// staleChainDelay is how long a chain no longer used stays (flushed) before it is deleted:
// before Linux 6.2 the kernel notices only a little after a map element's deletion that
// the chain it pointed to is unreferenced, and refuses to delete it until then.
const staleChainDelay = time.Second

// familyProxier programs one IP family's table. It owns its state; one goroutine (the sync
// loop) calls it.
type familyProxier struct {
	fc             *familyConfig
	nft            knftables.Interface
	conntrack      conntracker
	interfaceAddrs func() ([]netip.Addr, error)
	now            func() time.Time

	// applied is the plan of every Service in the table; elements what the shared sets and
	// maps hold. Both are right only after a successful sync: a failed one sets needFull,
	// and the next full sync rebuilds them.
	applied  map[types.NamespacedName]*servicePlan
	elements *elementTable
	// staleChains are the flushed chains to delete, with when they went out of use.
	staleChains map[string]time.Time
	// baseRecreated: the base chains were deleted and made again once, so that a table left
	// by an older berth with other priorities takes the new ones.
	baseRecreated bool
	needFull      bool
	// nodePortIPs are where NodePorts answer (unless on every local address), as of the
	// last full sync.
	nodePortIPs []netip.Addr
	// conntrackOwed: a UDP port changed, its stale conntrack entries are to be deleted;
	// removedUDP are the UDP frontends gone since the last cleanup, whose entries all go.
	conntrackOwed bool
	removedUDP    map[netip.AddrPort]bool
}

func newFamilyProxier(fc *familyConfig, nft knftables.Interface, ct conntracker) *familyProxier {
	return &familyProxier{
		fc:             fc,
		nft:            nft,
		conntrack:      ct,
		interfaceAddrs: interfaceAddrs,
		now:            time.Now,
		applied:        map[types.NamespacedName]*servicePlan{},
		elements:       newElementTable(),
		staleChains:    map[string]time.Time{},
		needFull:       true,
		removedUDP:     map[netip.AddrPort]bool{},
	}
}

// syncStats describes one sync, for logs, metrics and tests.
type syncStats struct {
	full bool
	// services is how many Services were planned, changed how many had their rules
	// rewritten; operations the transaction's size.
	services, changed, operations int
	conntrackDeleted              int
}

// sync writes the rules of the Services in inputs (a full sync: of every Service, where
// inputs holds all of them and the table is rebuilt) in one transaction.
func (p *familyProxier) sync(ctx context.Context, inputs map[types.NamespacedName]*serviceInput, full bool, pl *planner) (stats syncStats, err error) {
	logger := klog.FromContext(ctx)
	start := p.now()
	stats.full = full
	defer func() {
		if err != nil {
			// The state in memory may not be the table's any more.
			p.needFull = true
		}
	}()

	// The caller makes every sync after a failure a full one, with every Service in inputs.
	staleFailed := false
	if err := p.deleteStaleChains(ctx, start); err != nil {
		logger.Error(err, "Deleting stale chains failed; the next full sync finds them again", "family", p.fc.rules.family)
		staleFailed = true
	}

	tx := p.nft.NewTransaction()
	var existing map[string][]string
	if full {
		p.nodePortIPs = nil
		if !p.fc.nodePortAll {
			var addrs []netip.Addr
			if len(p.fc.nodePortCIDRs) > 0 {
				var addrErr error
				if addrs, addrErr = p.interfaceAddrs(); addrErr != nil {
					logger.Error(addrErr, "Listing the node's addresses for NodePorts failed; NodePorts answer on the primary IPs only")
				}
			}
			p.nodePortIPs = p.fc.nodePortIPs(addrs)
		}
		p.writeBase(tx)
		var listErr error
		if existing, listErr = p.nft.ListAll(ctx); listErr != nil && !knftables.IsNotFound(listErr) {
			// Leftovers stay until the next full sync lists them.
			logger.Error(listErr, "Listing the table's chains and sets failed", "family", p.fc.rules.family)
		}
		p.elements.reset()
	}

	names := maps.Clone(inputs)
	if full {
		for nn := range p.applied {
			if _, ok := names[nn]; !ok {
				names[nn] = nil
			}
		}
	}
	var (
		chainOps, setOps, ruleOps []func()
		staleFlush, staleSets     []string
		touched                   []elemKey
		activeChains              = map[string]bool{}
		activeSets                = map[string]bool{}
		next                      = map[types.NamespacedName]*servicePlan{}
	)
	for _, nn := range sortedNames(names) {
		stats.services++
		var plan *servicePlan
		if in := names[nn]; in != nil {
			plan = pl.planService(in.ports[p.fc.rules.apiFamily], in.endpoints(p.fc.rules.apiFamily))
		}
		prev := p.applied[nn]
		if plan != nil {
			for name := range plan.chains {
				activeChains[name] = true
			}
			for name := range plan.affinity {
				activeSets[name] = true
			}
		}
		if !full && prev.equal(plan) {
			continue
		}
		next[nn] = plan
		if !prev.equal(plan) {
			stats.changed++
			p.noteUDPChange(prev, plan)
		} else if full {
			stats.changed++
		}
		if plan == nil {
			plan = newServicePlan()
		}
		// old is what the table holds of the Service (a full sync rewrites all of it), prev
		// what it held at the last sync (for what to remove).
		if prev == nil {
			prev = newServicePlan()
		}
		old := prev
		if full {
			old = newServicePlan()
		}
		for _, name := range slices.Sorted(maps.Keys(plan.chains)) {
			rules := plan.chains[name]
			if was, ok := old.chains[name]; ok && slices.Equal(was, rules) {
				continue
			}
			delete(p.staleChains, name)
			chainOps = append(chainOps, func() {
				tx.Add(&knftables.Chain{Name: name})
				tx.Flush(&knftables.Chain{Name: name})
			})
			ruleOps = append(ruleOps, func() {
				for _, r := range rules {
					tx.Add(&knftables.Rule{Chain: name, Rule: r})
				}
			})
		}
		for _, name := range slices.Sorted(maps.Keys(prev.chains)) {
			if _, ok := plan.chains[name]; !ok {
				staleFlush = append(staleFlush, name)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(plan.affinity)) {
			if _, ok := old.affinity[name]; ok {
				continue
			}
			timeout := time.Duration(plan.affinity[name]) * time.Second
			setOps = append(setOps, func() {
				// "dynamic": the kernel adds it to a set a rule updates anyway, and a
				// second add without it would then look like a change of flags.
				tx.Add(&knftables.Set{Name: name, Type: p.fc.rules.addrType,
					Flags: []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag}, Timeout: &timeout})
			})
		}
		for _, name := range slices.Sorted(maps.Keys(prev.affinity)) {
			if _, ok := plan.affinity[name]; !ok {
				staleSets = append(staleSets, name)
			}
		}
		touched = append(touched, p.elements.replace(nn, old.elements, plan.elements)...)
	}
	if full {
		// What an earlier run (or another berth) left behind.
		for _, name := range existing["chain"] {
			if isServiceChain(name) && !activeChains[name] && !slices.Contains(staleFlush, name) {
				staleFlush = append(staleFlush, name)
			}
		}
		for _, name := range existing["set"] {
			if isAffinitySet(name) && !activeSets[name] && !slices.Contains(staleSets, name) {
				staleSets = append(staleSets, name)
			}
		}
	}

	// Chains before the sets, rules and elements that name them; the flushes of stale
	// chains before the deletion of the sets their rules used.
	for _, op := range chainOps {
		op()
	}
	for _, op := range setOps {
		op()
	}
	for _, op := range ruleOps {
		op()
	}
	p.elements.write(tx, touched)
	for _, name := range staleFlush {
		tx.Flush(&knftables.Chain{Name: name})
	}
	for _, name := range staleSets {
		tx.Delete(&knftables.Set{Name: name})
	}
	stats.operations = tx.NumOperations()
	if tx.NumOperations() > 0 {
		if err := p.nft.Run(ctx, tx); err != nil {
			clear(p.staleChains)
			return stats, fmt.Errorf("nftables %s transaction of %d operations failed: %w", p.fc.rules.family, tx.NumOperations(), err)
		}
	}

	for nn, plan := range next {
		if plan == nil {
			delete(p.applied, nn)
		} else {
			p.applied[nn] = plan
		}
	}
	for _, name := range staleFlush {
		if _, ok := p.staleChains[name]; !ok {
			p.staleChains[name] = start
		}
	}
	if full {
		p.baseRecreated = true
	}
	p.needFull = staleFailed
	stats.conntrackDeleted = p.cleanConntrack(ctx)
	return stats, nil
}

// deleteStaleChains deletes, in a transaction of their own, the chains out of use for
// staleChainDelay.
func (p *familyProxier) deleteStaleChains(ctx context.Context, now time.Time) error {
	tx := p.nft.NewTransaction()
	for _, name := range slices.Sorted(maps.Keys(p.staleChains)) {
		if now.Sub(p.staleChains[name]) >= staleChainDelay {
			tx.Delete(&knftables.Chain{Name: name})
			delete(p.staleChains, name)
		}
	}
	if tx.NumOperations() == 0 {
		return nil
	}
	// If they still exist, the next full sync lists and flags them again.
	return p.nft.Run(ctx, tx)
}

// baseChains are the chains on the netfilter hooks, named type-hook.
var baseChains = []struct {
	name     string
	typ      knftables.BaseChainType
	hook     knftables.BaseChainHook
	priority knftables.BaseChainPriority
}{
	// Before DNAT, on the original destination: loadBalancerSourceRanges.
	{filterPreroutingPreDNATChain, knftables.FilterType, knftables.PreroutingHook, knftables.DNATPriority + "-10"},
	{filterOutputPreDNATChain, knftables.FilterType, knftables.OutputHook, knftables.DNATPriority + "-10"},
	// After DNAT: reject or drop what found no endpoint (reject works from these hooks on
	// every kernel, not from prerouting before 5.9).
	{filterInputChain, knftables.FilterType, knftables.InputHook, knftables.FilterPriority},
	{filterForwardChain, knftables.FilterType, knftables.ForwardHook, knftables.FilterPriority},
	{filterOutputChain, knftables.FilterType, knftables.OutputHook, knftables.FilterPriority},
	// DNAT: from outside and from pods in prerouting, from the host's processes in output.
	{natPreroutingChain, knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority},
	{natOutputChain, knftables.NATType, knftables.OutputHook, knftables.DNATPriority},
	// Masquerade after the last routing decision.
	{natPostroutingChain, knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority},
}

// jumps are the base chains' rules.
var jumps = []struct{ from, rule string }{
	{filterPreroutingPreDNATChain, "ct state new jump " + firewallCheckChain},
	{filterOutputPreDNATChain, "ct state new jump " + firewallCheckChain},
	{filterInputChain, "ct state new jump " + nodePortCheckChain},
	{filterInputChain, "ct state new jump " + serviceCheckChain},
	{filterForwardChain, "ct state new jump " + serviceCheckChain},
	{filterForwardChain, "ct state new jump " + clusterIPsCheckChain},
	{filterOutputChain, "ct state new jump " + serviceCheckChain},
	{filterOutputChain, "ct state new jump " + clusterIPsCheckChain},
	{natPreroutingChain, "jump " + servicesChain},
	{natOutputChain, "jump " + servicesChain},
	{natPostroutingChain, "jump " + masqueradingChain},
}

var fixedChains = []string{servicesChain, masqueradingChain, serviceCheckChain, nodePortCheckChain,
	firewallCheckChain, clusterIPsCheckChain, rejectChain}

// writeBase adds to tx the table's fixed part, rewritten at each full sync: the base
// chains and their jumps, the fixed chains and their rules, the shared sets and maps
// (flushed: the Services' elements follow), and the NodePort addresses.
func (p *familyProxier) writeBase(tx *knftables.Transaction) {
	f := p.fc.rules
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("berth service proxy (kube-proxy's nftables mode)")})
	if !p.baseRecreated {
		for _, bc := range baseChains {
			tx.Add(&knftables.Chain{Name: bc.name})
			tx.Delete(&knftables.Chain{Name: bc.name})
		}
	}
	for _, bc := range baseChains {
		c := &knftables.Chain{Name: bc.name, Type: knftables.PtrTo(bc.typ), Hook: knftables.PtrTo(bc.hook), Priority: knftables.PtrTo(bc.priority)}
		tx.Add(c)
		tx.Flush(c)
	}
	for _, name := range fixedChains {
		tx.Add(&knftables.Chain{Name: name})
		tx.Flush(&knftables.Chain{Name: name})
	}
	for _, j := range jumps {
		tx.Add(&knftables.Rule{Chain: j.from, Rule: j.rule})
	}

	addrKey := f.addrType + " . inet_proto . inet_service"
	sets := []*knftables.Set{
		{Name: clusterIPsSet, Type: f.addrType, Comment: knftables.PtrTo("active ClusterIPs")},
		{Name: hairpinSet, Type: f.addrType + " . " + f.addrType + " . inet_proto . inet_service", Comment: knftables.PtrTo("local endpoints that may reach themselves through a Service")},
	}
	mapsOf := []*knftables.Map{
		{Name: serviceIPsMap, Type: addrKey + " : verdict", Comment: knftables.PtrTo("ClusterIP, external IP and load balancer IP traffic")},
		{Name: serviceNodePortsMap, Type: "inet_proto . inet_service : verdict", Comment: knftables.PtrTo("NodePort traffic")},
		{Name: noEndpointServicesMap, Type: addrKey + " : verdict", Comment: knftables.PtrTo("reject or drop service IP traffic without endpoints")},
		{Name: noEndpointNodePorts, Type: "inet_proto . inet_service : verdict", Comment: knftables.PtrTo("reject or drop NodePort traffic without endpoints")},
		{Name: firewallIPsMap, Type: addrKey + " : verdict", Comment: knftables.PtrTo("load balancer IPs with source ranges")},
	}
	for _, s := range sets {
		tx.Add(s)
		tx.Flush(s)
	}
	for _, m := range mapsOf {
		tx.Add(m)
		tx.Flush(m)
	}
	nodePortIPs := &knftables.Set{Name: nodePortIPsSet, Type: f.addrType, Comment: knftables.PtrTo("IPs that accept NodePort traffic")}
	tx.Add(nodePortIPs)
	if p.fc.nodePortAll {
		// Add then delete, so that it is gone whether or not it was there.
		tx.Delete(nodePortIPs)
	} else {
		tx.Flush(nodePortIPs)
		for _, a := range p.nodePortIPs {
			tx.Add(&knftables.Element{Set: nodePortIPsSet, Key: []string{a.String()}})
		}
	}

	add := func(chain, rule string, comment ...string) {
		r := &knftables.Rule{Chain: chain, Rule: rule}
		if len(comment) > 0 {
			r.Comment = &comment[0]
		}
		tx.Add(r)
	}
	add(masqueradingChain, "mark and "+masqueradeMark+" != 0 mark set mark xor "+masqueradeMark+" masquerade fully-random")
	add(masqueradingChain, "ct status dnat "+f.ipX+" saddr . "+f.ipX+" daddr . meta l4proto . th dport @"+hairpinSet+" masquerade fully-random", "hairpin")
	add(rejectChain, "meta l4proto tcp reject with tcp reset")
	add(rejectChain, "reject")
	add(serviceCheckChain, f.ipX+" daddr . meta l4proto . th dport vmap @"+noEndpointServicesMap)
	add(firewallCheckChain, f.ipX+" daddr . meta l4proto . th dport vmap @"+firewallIPsMap)
	add(clusterIPsCheckChain, f.ipX+" daddr @"+clusterIPsSet+" reject", "reject traffic to undefined ports of ClusterIPs")
	if len(p.fc.clusterCIDRs) > 0 {
		add(servicesChain, f.ipX+" daddr @"+clusterIPsSet+" "+f.ipX+" saddr != { "+joinPrefixes(p.fc.clusterCIDRs)+" } "+markMasquerade,
			"masquerade ClusterIP traffic from outside the cluster")
	}
	add(servicesChain, f.ipX+" daddr . meta l4proto . th dport vmap @"+serviceIPsMap)
	if p.fc.nodePortAll {
		add(servicesChain, "fib daddr type local "+f.ipX+" daddr != "+f.loopback+" meta l4proto . th dport vmap @"+serviceNodePortsMap)
		add(nodePortCheckChain, f.ipX+" daddr != "+f.loopback+" meta l4proto . th dport vmap @"+noEndpointNodePorts)
	} else {
		add(servicesChain, f.ipX+" daddr @"+nodePortIPsSet+" meta l4proto . th dport vmap @"+serviceNodePortsMap)
		add(nodePortCheckChain, f.ipX+" daddr @"+nodePortIPsSet+" meta l4proto . th dport vmap @"+noEndpointNodePorts)
	}
}

// noteUDPChange records that a Service with a UDP port changed from prev to next (either
// nil): its stale conntrack entries are to go, those of its removed frontends all.
func (p *familyProxier) noteUDPChange(prev, next *servicePlan) {
	if !prev.hasUDP() && !next.hasUDP() {
		return
	}
	p.conntrackOwed = true
	if prev == nil {
		return
	}
	kept := map[netip.AddrPort]bool{}
	if next != nil {
		for _, u := range next.udp {
			for _, f := range u.frontends {
				kept[f] = true
			}
		}
	}
	for _, u := range prev.udp {
		for _, f := range u.frontends {
			if !kept[f] {
				p.removedUDP[f] = true
			}
		}
	}
}

// cleanConntrack deletes the stale UDP conntrack entries when a UDP port changed: an entry
// keeps a flow going to the endpoint it was DNATed to, which for UDP (no connection to end)
// may outlive the endpoint forever. It returns how many went.
func (p *familyProxier) cleanConntrack(ctx context.Context) int {
	if !p.conntrackOwed || p.conntrack == nil {
		return 0
	}
	stale := staleUDPFilter(p.applied, p.removedUDP, p.nodePortIPs, p.fc.nodePortAll)
	n, err := p.conntrack.deleteUDP(p.fc.rules.apiFamily, stale)
	if err != nil && !errors.Is(err, context.Canceled) {
		klog.FromContext(ctx).Error(err, "Deleting stale UDP conntrack entries failed", "family", p.fc.rules.family, "deleted", n)
	}
	p.conntrackOwed = false
	clear(p.removedUDP)
	return n
}

// Package proxy is the node's service proxy: kube-proxy's nftables mode, which berth up runs
// beside its node agent as a component of its own (system:kube-proxy, as kubeadm runs
// kube-proxy; cmd/berth/proxy.go), outside the pod's flow. Once the EndpointSlice controller
// has published a pod as a Service's endpoint, this package makes the node's kernel send the
// Service's traffic (ClusterIP, external IPs, load balancer IPs, NodePorts) to it: it watches
// Services, discovery.k8s.io/v1 EndpointSlices and its own Node (for topology hints), and
// writes the rules through sigs.k8s.io/knftables, which drives the nft binary.
//
// # Rules
//
// Everything is in a table of its own (Config.Table, "berth-proxy" by default), in family
// ip and, on a dual-stack node, in ip6 too (each family is proxied on its own, from the
// Services' cluster IPs and the slices of that family). Base chains hook netfilter; shared sets and maps dispatch to one
// chain per service port:
//
//	filter-prerouting-pre-dnat, filter-output-pre-dnat (dstnat-10) → firewall-check:
//	    ip daddr . proto . dport vmap @firewall-ips → firewall-… (loadBalancerSourceRanges: drop others)
//	nat-prerouting, nat-output (dstnat) → services:
//	    ClusterIP from outside ClusterCIDRs: mark for masquerade
//	    ip daddr . proto . dport vmap @service-ips          (ClusterIPs, external IPs, LB IPs)
//	    (fib daddr type local | ip daddr @nodeport-ips) . proto . dport vmap @service-nodeports
//	  service-ips[clusterIP] → goto service-HASH-ns/svc/proto/port (or local-… for
//	    internalTrafficPolicy Local); external IPs, LB IPs and NodePorts → goto external-…:
//	    policy Cluster: mark for masquerade, goto service-…; policy Local: pods (ClusterCIDRs)
//	    and the node itself go to service-… (the node masqueraded), others to local-…
//	  service-… / local-…: meta l4proto tcp dnat ip addr . port to numgen random mod N map {…}
//	    (a single endpoint: dnat to IP:port). With sessionAffinity ClientIP: ip saddr
//	    @affinity-… goto endpoint-… for each endpoint, else numgen random mod N vmap { i :
//	    goto endpoint-… }; endpoint-…: update @affinity-… { ip saddr } (a set with the
//	    Service's timeout), dnat to IP:port.
//	filter-input, filter-forward, filter-output (filter), new connections:
//	    service-endpoints-check: ip daddr . proto . dport vmap @no-endpoint-services
//	    nodeport-endpoints-check (input): NodePort address . proto . dport vmap @no-endpoint-nodeports
//	      → goto reject-chain (no endpoint at all: TCP reset, else ICMP port unreachable),
//	        or drop (policy Local without a local endpoint)
//	    cluster-ips-check (forward, output): ip daddr @cluster-ips reject (undefined ports)
//	nat-postrouting (srcnat) → masquerading: marked packets, and hairpin connections (ct
//	    status dnat, saddr . daddr . proto . dport in @hairpin-connections: a local endpoint
//	    reaching itself through its Service), masquerade fully-random.
//
// Endpoints are chosen as kube-proxy chooses them: the ready ones, narrowed by topology
// hints (PreferSameNode, PreferSameZone) when every ready endpoint has one for this node or
// zone; the serving and terminating ones only when none is ready; for a Local policy, this
// node's endpoints by the same rule.
//
// # Syncs
//
// The informers' handlers convert each changed object once (a Service port or slice
// endpoint that cannot be programmed is left out with a log, never the others) and mark
// its Service in the change tracker. The sync loop writes, in one knftables transaction
// per family, a full sync the first time, every SyncPeriod and after any failure (the
// fixed chains, sets and maps rewritten and refilled, every Service's chains rewritten,
// leftovers removed), and in between partial syncs of only the Services whose plan changed,
// at most once per MinSyncPeriod. A Service's plan (its elements, chains and affinity sets)
// is a pure function of its Service, slices and the configuration (plan.go), so a partial
// sync is the difference of two plans. A chain no longer used is flushed at once and
// deleted a second later (older kernels lag in noticing it is unreferenced). After a sync
// that changed a UDP port, the conntrack entries still sending its traffic where it may no
// longer go are deleted (netlink), as kube-proxy's conntrack reconciler.
//
// A sync that fails or panics is logged, counted (kubeproxy_sync_proxy_rules_nftables_sync_failures_total,
// berth_recovered_panics_total{component="proxy"}) and retried as a full sync after a
// back-off. The rules outlive the process; Cleanup deletes the tables.
package proxy

package proxy

// ruleScenario is a set of objects and the lines they add to the table (readable: no
// hashes, no table name).
type ruleScenario struct {
	name string
	// zone is the node's zone.
	zone string
	objs []any
	want string
}

func ruleScenarios() []ruleScenario {
	return []ruleScenario{
		{name: "ClusterIP with 3 endpoints", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").ep("10.1.1.1", "node-c").ep("10.1.2.1", "").obj(),
		}, want: `
			add chain service-ns/web/tcp/http
			add rule service-ns/web/tcp/http meta l4proto tcp dnat ip addr . port to numgen random mod 3 map { 0 : 10.1.0.1 . 8080 , 1 : 10.1.1.1 . 8080 , 2 : 10.1.2.1 . 8080 }
			add element cluster-ips { 10.96.0.10 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
		`},
		{name: "NodePort, policy Cluster", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).nodePort(30080).obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").ep("10.1.1.1", "node-c").obj(),
		}, want: `
			add chain external-ns/web/tcp/http
			add chain service-ns/web/tcp/http
			add rule external-ns/web/tcp/http mark set mark or 0x4000
			add rule external-ns/web/tcp/http goto service-ns/web/tcp/http
			add rule service-ns/web/tcp/http meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.1.0.1 . 8080 , 1 : 10.1.1.1 . 8080 }
			add element cluster-ips { 10.96.0.10 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
			add element service-nodeports { tcp . 30080 : goto external-ns/web/tcp/http }
		`},
		{name: "no endpoints: reject", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).nodePort(30080).externalIPs("203.0.113.5").obj(),
		}, want: `
			add element cluster-ips { 10.96.0.10 }
			add element no-endpoint-nodeports { tcp . 30080 : goto reject-chain }
			add element no-endpoint-services { 10.96.0.10 . tcp . 80 : goto reject-chain }
			add element no-endpoint-services { 203.0.113.5 . tcp . 80 : goto reject-chain }
		`},
		{name: "session affinity", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).affinity(600).obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").ep("10.1.1.1", "node-c").obj(),
		}, want: `
			add chain endpoint-ns/web/tcp/http/_10.1.1.1/8080
			add chain endpoint-ns/web/tcp/http/_10.1.0.1/8080
			add chain service-ns/web/tcp/http
			add set affinity-ns/web/tcp/http/_10.1.0.1/8080/600 { type ipv4_addr ; flags dynamic,timeout ; timeout 600s ; }
			add set affinity-ns/web/tcp/http/_10.1.1.1/8080/600 { type ipv4_addr ; flags dynamic,timeout ; timeout 600s ; }
			add rule endpoint-ns/web/tcp/http/_10.1.1.1/8080 update @affinity-ns/web/tcp/http/_10.1.1.1/8080/600 { ip saddr }
			add rule endpoint-ns/web/tcp/http/_10.1.1.1/8080 meta l4proto tcp dnat to 10.1.1.1:8080
			add rule endpoint-ns/web/tcp/http/_10.1.0.1/8080 update @affinity-ns/web/tcp/http/_10.1.0.1/8080/600 { ip saddr }
			add rule endpoint-ns/web/tcp/http/_10.1.0.1/8080 meta l4proto tcp dnat to 10.1.0.1:8080
			add rule service-ns/web/tcp/http ip saddr @affinity-ns/web/tcp/http/_10.1.0.1/8080/600 goto endpoint-ns/web/tcp/http/_10.1.0.1/8080
			add rule service-ns/web/tcp/http ip saddr @affinity-ns/web/tcp/http/_10.1.1.1/8080/600 goto endpoint-ns/web/tcp/http/_10.1.1.1/8080
			add rule service-ns/web/tcp/http numgen random mod 2 vmap { 0 : goto endpoint-ns/web/tcp/http/_10.1.0.1/8080 , 1 : goto endpoint-ns/web/tcp/http/_10.1.1.1/8080 }
			add element cluster-ips { 10.96.0.10 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
		`},
		{name: "externalTrafficPolicy Local", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).nodePort(30080).externalLocal().obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", testNode).ep("10.1.1.1", "node-c").obj(),
		}, want: `
			add chain external-ns/web/tcp/http
			add chain local-ns/web/tcp/http
			add chain service-ns/web/tcp/http
			add rule external-ns/web/tcp/http ip saddr { 10.1.0.0/16 } goto service-ns/web/tcp/http
			add rule external-ns/web/tcp/http fib saddr type local mark set mark or 0x4000
			add rule external-ns/web/tcp/http fib saddr type local goto service-ns/web/tcp/http
			add rule external-ns/web/tcp/http goto local-ns/web/tcp/http
			add rule local-ns/web/tcp/http meta l4proto tcp dnat to 10.1.0.1:8080
			add rule service-ns/web/tcp/http meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.1.0.1 . 8080 , 1 : 10.1.1.1 . 8080 }
			add element cluster-ips { 10.96.0.10 }
			add element hairpin-connections { 10.1.0.1 . 10.1.0.1 . tcp . 8080 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
			add element service-nodeports { tcp . 30080 : goto external-ns/web/tcp/http }
		`},
		{name: "externalTrafficPolicy Local without local endpoints: drop", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).nodePort(30080).externalLocal().obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.1.1", "node-c").obj(),
		}, want: `
			add chain external-ns/web/tcp/http
			add chain service-ns/web/tcp/http
			add rule external-ns/web/tcp/http ip saddr { 10.1.0.0/16 } goto service-ns/web/tcp/http
			add rule external-ns/web/tcp/http fib saddr type local mark set mark or 0x4000
			add rule external-ns/web/tcp/http fib saddr type local goto service-ns/web/tcp/http
			add rule service-ns/web/tcp/http meta l4proto tcp dnat to 10.1.1.1:8080
			add element cluster-ips { 10.96.0.10 }
			add element no-endpoint-nodeports { tcp . 30080 : drop }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
			add element service-nodeports { tcp . 30080 : goto external-ns/web/tcp/http }
		`},
		{name: "externalTrafficPolicy Local: a serving terminating local endpoint when none local is ready", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).nodePort(30080).externalLocal().obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", testNode).terminating(true).ep("10.1.1.1", "node-c").obj(),
		}, want: `
			add chain external-ns/web/tcp/http
			add chain local-ns/web/tcp/http
			add chain service-ns/web/tcp/http
			add rule external-ns/web/tcp/http ip saddr { 10.1.0.0/16 } goto service-ns/web/tcp/http
			add rule external-ns/web/tcp/http fib saddr type local mark set mark or 0x4000
			add rule external-ns/web/tcp/http fib saddr type local goto service-ns/web/tcp/http
			add rule external-ns/web/tcp/http goto local-ns/web/tcp/http
			add rule local-ns/web/tcp/http meta l4proto tcp dnat to 10.1.0.1:8080
			add rule service-ns/web/tcp/http meta l4proto tcp dnat to 10.1.1.1:8080
			add element cluster-ips { 10.96.0.10 }
			add element hairpin-connections { 10.1.0.1 . 10.1.0.1 . tcp . 8080 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
			add element service-nodeports { tcp . 30080 : goto external-ns/web/tcp/http }
		`},
		{name: "internalTrafficPolicy Local", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).internalLocal().obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", testNode).ep("10.1.1.1", "node-c").obj(),
		}, want: `
			add chain local-ns/web/tcp/http
			add rule local-ns/web/tcp/http meta l4proto tcp dnat to 10.1.0.1:8080
			add element cluster-ips { 10.96.0.10 }
			add element hairpin-connections { 10.1.0.1 . 10.1.0.1 . tcp . 8080 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto local-ns/web/tcp/http }
		`},
		{name: "internalTrafficPolicy Local without local endpoints: drop", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).internalLocal().obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.1.1", "node-c").obj(),
		}, want: `
			add element cluster-ips { 10.96.0.10 }
			add element no-endpoint-services { 10.96.0.10 . tcp . 80 : drop }
		`},
		{name: "terminating endpoints are not used while one is ready", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").ep("10.1.1.1", "node-c").terminating(true).obj(),
		}, want: `
			add chain service-ns/web/tcp/http
			add rule service-ns/web/tcp/http meta l4proto tcp dnat to 10.1.0.1:8080
			add element cluster-ips { 10.96.0.10 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
		`},
		{name: "serving terminating endpoints when none is ready", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).
				ep("10.1.0.1", "node-b").terminating(true).ep("10.1.1.1", "node-c").terminating(false).ep("10.1.2.1", "node-c").notReady().obj(),
		}, want: `
			add chain service-ns/web/tcp/http
			add rule service-ns/web/tcp/http meta l4proto tcp dnat to 10.1.0.1:8080
			add element cluster-ips { 10.96.0.10 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
		`},
		{name: "hairpin: a local endpoint", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", testNode).obj(),
		}, want: `
			add chain service-ns/web/tcp/http
			add rule service-ns/web/tcp/http meta l4proto tcp dnat to 10.1.0.1:8080
			add element cluster-ips { 10.96.0.10 }
			add element hairpin-connections { 10.1.0.1 . 10.1.0.1 . tcp . 8080 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
		`},
		{name: "LoadBalancer with source ranges, external IPs", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).nodePort(30080).loadBalancer("198.51.100.7").
				sourceRanges("203.0.113.0/24", "192.168.0.0/24").externalIPs("203.0.113.5").obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").obj(),
		}, want: `
			add chain external-ns/web/tcp/http
			add chain firewall-ns/web/tcp/http
			add chain service-ns/web/tcp/http
			add rule external-ns/web/tcp/http mark set mark or 0x4000
			add rule external-ns/web/tcp/http goto service-ns/web/tcp/http
			add rule firewall-ns/web/tcp/http ip saddr != { 203.0.113.0/24, 192.168.0.0/24, 198.51.100.7 } drop
			add rule service-ns/web/tcp/http meta l4proto tcp dnat to 10.1.0.1:8080
			add element cluster-ips { 10.96.0.10 }
			add element firewall-ips { 198.51.100.7 . tcp . 80 : goto firewall-ns/web/tcp/http }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
			add element service-ips { 198.51.100.7 . tcp . 80 : goto external-ns/web/tcp/http }
			add element service-ips { 203.0.113.5 . tcp . 80 : goto external-ns/web/tcp/http }
			add element service-nodeports { tcp . 30080 : goto external-ns/web/tcp/http }
		`},
		{name: "UDP and SCTP ports", objs: []any{
			makeService("kube-system", "dns", "10.96.0.53").port("dns", udp, 53).port("dns-tcp", tcp, 53).port("sig", sctp, 3868).obj(),
			makeSlice("kube-system", "dns", "dns-1").port("dns", udp, 53).port("dns-tcp", tcp, 53).port("sig", sctp, 3868).ep("10.1.0.1", "node-b").obj(),
		}, want: `
			add chain service-kube-system/dns/tcp/dns-tcp
			add chain service-kube-system/dns/sctp/sig
			add chain service-kube-system/dns/udp/dns
			add rule service-kube-system/dns/tcp/dns-tcp meta l4proto tcp dnat to 10.1.0.1:53
			add rule service-kube-system/dns/sctp/sig meta l4proto sctp dnat to 10.1.0.1:3868
			add rule service-kube-system/dns/udp/dns meta l4proto udp dnat to 10.1.0.1:53
			add element cluster-ips { 10.96.0.53 }
			add element service-ips { 10.96.0.53 . sctp . 3868 : goto service-kube-system/dns/sctp/sig }
			add element service-ips { 10.96.0.53 . tcp . 53 : goto service-kube-system/dns/tcp/dns-tcp }
			add element service-ips { 10.96.0.53 . udp . 53 : goto service-kube-system/dns/udp/dns }
		`},
		{name: "a port the proxy cannot program is left out, not the others", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).port("odd", "ICMP", 7).port("big", tcp, 70000).obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").ep("not-an-ip", "node-b").obj(),
		}, want: `
			add chain service-ns/web/tcp/http
			add rule service-ns/web/tcp/http meta l4proto tcp dnat to 10.1.0.1:8080
			add element cluster-ips { 10.96.0.10 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
		`},
		{name: "zone hints", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).
				ep("10.1.0.1", "node-b").zones("zone-a").ep("10.1.1.1", "node-c").zones("zone-b").obj(),
		}, want: `
			add chain service-ns/web/tcp/http
			add rule service-ns/web/tcp/http meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.1.0.1 . 8080 , 1 : 10.1.1.1 . 8080 }
			add element cluster-ips { 10.96.0.10 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
		`},
		{name: "zone hints, the node in zone-b", zone: "zone-b", objs: []any{
			makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj(),
			makeSlice("ns", "web", "web-1").port("http", tcp, 8080).
				ep("10.1.0.1", "node-b").zones("zone-a").ep("10.1.1.1", "node-c").zones("zone-b").obj(),
		}, want: `
			add chain service-ns/web/tcp/http
			add rule service-ns/web/tcp/http meta l4proto tcp dnat to 10.1.1.1:8080
			add element cluster-ips { 10.96.0.10 }
			add element service-ips { 10.96.0.10 . tcp . 80 : goto service-ns/web/tcp/http }
		`},
		{name: "the kubernetes Service: the API server's host IP", objs: []any{
			makeService("default", "kubernetes", "10.96.0.1").port("https", tcp, 443).obj(),
			makeSlice("default", "kubernetes", "kubernetes").port("https", tcp, 6443).ep("192.168.0.10", "").obj(),
		}, want: `
			add chain service-default/kubernetes/tcp/https
			add rule service-default/kubernetes/tcp/https meta l4proto tcp dnat to 192.168.0.10:6443
			add element cluster-ips { 10.96.0.1 }
			add element service-ips { 10.96.0.1 . tcp . 443 : goto service-default/kubernetes/tcp/https }
		`},
		{name: "headless and ExternalName Services have no rules", objs: []any{
			makeService("ns", "headless", "None").port("http", tcp, 80).obj(),
			func() any {
				s := makeService("ns", "ext", "").obj()
				s.Spec.Type = "ExternalName"
				s.Spec.ExternalName = "example.org"
				return s
			}(),
		}, want: ``},
	}
}

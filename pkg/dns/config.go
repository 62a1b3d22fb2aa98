package dns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Defaults of Config, as CoreDNS's kubernetes plugin and the kubelet have them.
const (
	// DefaultZone is the cluster domain (the kubelet's clusterDomain).
	DefaultZone = "cluster.local"
	// DefaultTTL is the TTL of the zone's records (the kubernetes plugin's default).
	DefaultTTL = 5 * time.Second
	// DefaultListen serves on every address of the host, port 53: the service proxy DNATs the
	// DNS Service's cluster IP to one of them, and the CNI bridge's address, which pods can
	// reach directly, exists only once the first pod has started. A node that should not
	// answer on its other interfaces passes its own address instead.
	DefaultListen = "0.0.0.0:53"
	// DefaultClusterIP is the DNS Service's cluster IP as kubeadm and k3s choose it: the tenth
	// address of the default service range 10.96.0.0/12.
	DefaultClusterIP = "10.96.0.10"

	resolvConf         = "/etc/resolv.conf"
	resolvedResolvConf = "/run/systemd/resolve/resolv.conf"
)

// Config says what the cluster DNS serves and where. The zero value is valid: every field has a
// default.
type Config struct {
	// Zone is the cluster domain the server is authoritative for (DefaultZone).
	Zone string
	// Listen are the addresses ("10.0.0.5:53", "[fd00::5]:53") served over both UDP and TCP
	// (DefaultListen). Port 0 picks a free port, the same for UDP and TCP (tests).
	Listen []string
	// Upstreams are the servers ("192.0.2.53" or "192.0.2.53:5353") that names outside the
	// zone are forwarded to, in order of preference. Empty: the nameservers of the node's
	// /etc/resolv.conf (the kubelet's resolvConf), without loopback ones; when those were all
	// loopback (systemd-resolved's stub 127.0.0.53), those of
	// /run/systemd/resolve/resolv.conf, as kubeadm points the kubelet at.
	Upstreams []string
	// TTL of the zone's records (DefaultTTL); negative answers are cached as long. Whole
	// seconds; less than one second means the default.
	TTL time.Duration
}

// completed is a Config with its defaults filled and its addresses parsed.
type completed struct {
	zone      string // lower case, fully qualified: "cluster.local."
	listen    []string
	upstreams []string // host:port
	ttl       uint32
}

// complete fills cfg's defaults and checks it. readFile reads a resolv.conf (os.ReadFile
// outside tests).
func (cfg Config) complete(readFile func(string) ([]byte, error)) (completed, error) {
	c := completed{zone: dns.CanonicalName(DefaultZone), ttl: uint32(DefaultTTL / time.Second)}
	if cfg.Zone != "" {
		zone := strings.Trim(cfg.Zone, ".")
		if _, ok := dns.IsDomainName(zone); !ok || zone == "" {
			return completed{}, fmt.Errorf("the cluster domain %q is not a domain name", cfg.Zone)
		}
		c.zone = dns.CanonicalName(zone)
	}
	if cfg.TTL >= time.Second {
		c.ttl = uint32(min(cfg.TTL, time.Hour) / time.Second)
	}
	c.listen = cfg.Listen
	if len(c.listen) == 0 {
		c.listen = []string{DefaultListen}
	}
	for _, l := range c.listen {
		if _, _, err := net.SplitHostPort(l); err != nil {
			return completed{}, fmt.Errorf("the listen address %q: %w", l, err)
		}
	}
	upstreams := cfg.Upstreams
	if len(upstreams) == 0 {
		upstreams = hostUpstreams(readFile)
	}
	for _, u := range upstreams {
		addr, err := upstreamAddress(u)
		if err != nil {
			return completed{}, err
		}
		if !listensOn(c.listen, addr) {
			c.upstreams = append(c.upstreams, addr)
		}
	}
	return c, nil
}

// upstreamAddress is u as host:port, port 53 unless u names one.
func upstreamAddress(u string) (string, error) {
	if ip, err := netip.ParseAddr(u); err == nil {
		return netip.AddrPortFrom(ip, 53).String(), nil
	}
	host, port, err := net.SplitHostPort(u)
	if err != nil {
		return "", fmt.Errorf("the upstream %q is neither an address nor address:port", u)
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return "", fmt.Errorf("the upstream %q: %q is not an IP address", u, host)
	}
	return net.JoinHostPort(host, port), nil
}

// listensOn says whether the server itself would answer at addr: forwarding there would loop.
func listensOn(listen []string, addr string) bool {
	uh, up, _ := net.SplitHostPort(addr)
	for _, l := range listen {
		lh, lp, _ := net.SplitHostPort(l)
		if lp == up && lh == uh {
			return true
		}
	}
	return false
}

// hostUpstreams are the node's nameservers as the kubelet would hand them to a Default-policy
// pod, less loopback ones (a pod's 127.0.0.1 is the pod itself; for the server it would be the
// node's stub resolver, which may forward to the cluster DNS and loop).
func hostUpstreams(readFile func(string) ([]byte, error)) []string {
	servers, sawLoopback := nameservers(readFile, resolvConf)
	if len(servers) == 0 && sawLoopback {
		servers, _ = nameservers(readFile, resolvedResolvConf)
	}
	return servers
}

// nameservers are the non-loopback nameserver lines of a resolv.conf.
func nameservers(readFile func(string) ([]byte, error), path string) (servers []string, sawLoopback bool) {
	data, err := readFile(path)
	if err != nil {
		return nil, false
	}
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		ip, err := netip.ParseAddr(fields[1])
		if err != nil {
			continue
		}
		if ip.IsLoopback() || ip.IsUnspecified() {
			sawLoopback = true
			continue
		}
		servers = append(servers, ip.String())
	}
	return servers, sawLoopback
}

var errNoUpstream = errors.New("no upstream nameserver is configured")

package kuberuntime

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// The API's limits on a pod's resolver configuration.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxDNSSearchLength    = 253
)

// podDNSConfig is the resolver configuration of the pod's sandbox, by dnsPolicy:
//   - None: only what spec.dnsConfig says;
//   - ClusterFirst (the default), ClusterFirstWithHostNet: the cluster DNS servers, the
//     cluster search path before the node's, ndots:5 — or, with no cluster DNS configured,
//     Default (with a MissingClusterDNS event); ClusterFirst on a host-network pod is
//     Default;
//   - Default: the node's resolv.conf.
//
// spec.dnsConfig is then merged in, and the result trimmed to the API's limits.
func (m *Manager) podDNSConfig(ctx context.Context, pod *v1.Pod) (*runtimeapi.DNSConfig, error) {
	hostConfig, err := m.hostDNSConfig()
	if err != nil {
		return nil, err
	}
	cfg := hostConfig
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = v1.DNSClusterFirst
	}
	useHost := policy == v1.DNSDefault || policy == v1.DNSClusterFirst && pod.Spec.HostNetwork
	switch {
	case policy == v1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
	case useHost:
	case len(m.cfg.ClusterDNS) > 0:
		cfg.Servers = nil
		for _, ip := range m.cfg.ClusterDNS {
			cfg.Servers = append(cfg.Servers, ip.String())
		}
		cfg.Searches = m.clusterSearches(pod.Namespace, cfg.Searches)
		cfg.Options = []string{"ndots:5"}
	default:
		useHost = true
		msg := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", v1.DNSClusterFirst, v1.DNSDefault)
		if m.recorder != nil {
			if m.cfg.NodeName != "" {
				node := &v1.ObjectReference{Kind: "Node", Name: m.cfg.NodeName, UID: types.UID(m.cfg.NodeName)}
				m.recorder.Eventf(node, v1.EventTypeWarning, "MissingClusterDNS", "%s", msg)
			}
			if ref := podRef(ctx, pod); ref != nil {
				m.recorder.Eventf(ref, v1.EventTypeWarning, "MissingClusterDNS", "pod: %q. %s", podDesc(pod), msg)
			}
		}
	}
	if useHost && m.cfg.ResolvConf == "-" {
		// No node resolver: resolve through the node itself.
		cfg.Servers, cfg.Searches = []string{"127.0.0.1"}, []string{"."}
	}
	if d := pod.Spec.DNSConfig; d != nil {
		cfg.Servers = omitDuplicates(append(cfg.Servers, d.Nameservers...))
		cfg.Searches = omitDuplicates(append(cfg.Searches, d.Searches...))
		cfg.Options = mergeDNSOptions(cfg.Options, d.Options)
	}
	return m.fitDNSLimits(ctx, pod, cfg), nil
}

// hostDNSConfig reads the node's resolver; with no resolver file ("-") it is empty.
func (m *Manager) hostDNSConfig() (*runtimeapi.DNSConfig, error) {
	if m.cfg.ResolvConf == "-" {
		return &runtimeapi.DNSConfig{}, nil
	}
	data, err := os.ReadFile(m.cfg.ResolvConf)
	if err != nil {
		return nil, fmt.Errorf("reading the node's resolver configuration: %w", err)
	}
	return parseResolvConf(string(data)), nil
}

// parseResolvConf reads a resolv.conf: nameservers accumulate, the last search line wins,
// options accumulate with later ones of the same name winning.
func parseResolvConf(data string) *runtimeapi.DNSConfig {
	cfg := &runtimeapi.DNSConfig{Servers: []string{}, Searches: []string{}, Options: []string{}}
	for _, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			cfg.Servers = append(cfg.Servers, fields[1])
		case "search":
			cfg.Searches = []string{}
			for _, s := range fields[1:] {
				if s != "." {
					cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.Options = appendDNSOptions(cfg.Options, fields[1:]...)
		}
	}
	return cfg
}

// clusterSearches puts <ns>.svc.<domain>, svc.<domain>, <domain> before the node's search
// path.
func (m *Manager) clusterSearches(namespace string, host []string) []string {
	d := m.cfg.ClusterDomain
	if d == "" {
		return host
	}
	return omitDuplicates(append([]string{namespace + ".svc." + d, "svc." + d, d}, host...))
}

// fitDNSLimits trims servers and search paths to the API's limits, with a DNSConfigForming
// event when it had to.
func (m *Manager) fitDNSLimits(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.DNSConfig) *runtimeapi.DNSConfig {
	warn := func(err error) {
		klog.FromContext(ctx).Error(err, "DNS configuration exceeds the limits", "pod", klog.KObj(pod))
		if ref := podRef(ctx, pod); ref != nil && m.recorder != nil {
			m.recorder.Event(ref, v1.EventTypeWarning, "DNSConfigForming", err.Error())
		}
	}
	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
		warn(fmt.Errorf("Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s", strings.Join(cfg.Servers, " ")))
	}
	exceeded := false
	if len(cfg.Searches) > maxDNSSearchPaths {
		cfg.Searches, exceeded = cfg.Searches[:maxDNSSearchPaths], true
	}
	kept := cfg.Searches[:0]
	for _, s := range cfg.Searches {
		if len(s) > maxDNSSearchLength {
			exceeded = true
			continue
		}
		kept = append(kept, s)
	}
	cfg.Searches = kept
	for len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		cfg.Searches, exceeded = cfg.Searches[:len(cfg.Searches)-1], true
	}
	if exceeded {
		warn(fmt.Errorf("Search Line limits were exceeded, some search paths have been omitted, the applied search line is: %s", strings.Join(cfg.Searches, " ")))
	}
	return cfg
}

func omitDuplicates(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// appendDNSOptions adds options, a later option replacing an earlier one of its name.
func appendDNSOptions(options []string, more ...string) []string {
	byName := map[string]string{}
	var order []string
	for _, o := range append(options, more...) {
		name, _, _ := strings.Cut(o, ":")
		if _, ok := byName[name]; !ok {
			order = append(order, name)
		}
		byName[name] = o
	}
	out := make([]string, 0, len(order))
	for _, name := range order {
		out = append(out, byName[name])
	}
	return out
}

// mergeDNSOptions merges the pod's dnsConfig options over the existing ones; the pod's win.
func mergeDNSOptions(existing []string, pod []v1.PodDNSConfigOption) []string {
	values := map[string]string{}
	for _, o := range existing {
		name, value, _ := strings.Cut(o, ":")
		values[name] = value
	}
	for _, o := range pod {
		values[o.Name] = ""
		if o.Value != nil {
			values[o.Name] = *o.Value
		}
	}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, name := range names {
		if values[name] != "" {
			out = append(out, name+":"+values[name])
		} else {
			out = append(out, name)
		}
	}
	return out
}

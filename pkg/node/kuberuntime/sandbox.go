package kuberuntime

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// createPodSandbox is step 4's first half (seed 001: "创建sandbox 容器"): it writes the
// pod's log directory and cgroup parents, then asks the runtime to run the sandbox, which
// pulls the sandbox image, starts it and has CNI wire its network. It returns the sandbox
// id and config, or a message and the error.
func (m *Manager) createPodSandbox(ctx context.Context, pod *v1.Pod, attempt uint32) (string, *runtimeapi.PodSandboxConfig, string, error) {
	config, err := m.generatePodSandboxConfig(ctx, pod, attempt)
	if err != nil {
		return "", nil, fmt.Sprintf("Failed to generate sandbox config for pod %q: %v", podDesc(pod), err), err
	}
	if err := os.MkdirAll(config.LogDirectory, 0o755); err != nil {
		return "", nil, fmt.Sprintf("Failed to create log directory for pod %q: %v", podDesc(pod), err), err
	}
	if err := m.setUpPodCgroup(pod, config.Linux.CgroupParent); err != nil {
		return "", nil, fmt.Sprintf("Failed to create the cgroup of pod %q: %v", podDesc(pod), err), err
	}
	handler, err := m.runtimeHandler(pod)
	if err != nil {
		return "", nil, fmt.Sprintf("Failed to create sandbox for pod %q: %v", podDesc(pod), err), err
	}
	id, err := m.runtime.RunPodSandbox(ctx, config, handler)
	if err != nil {
		return "", nil, fmt.Sprintf("Failed to create sandbox for pod %q: %v", podDesc(pod), err), err
	}
	return id, config, "", nil
}

// runtimeHandler is the CRI runtime handler of the pod: its RuntimeClass's, or, without a
// lookup, the class name itself.
func (m *Manager) runtimeHandler(pod *v1.Pod) (string, error) {
	if m.cfg.RuntimeHandlers != nil {
		return m.cfg.RuntimeHandlers.LookupRuntimeHandler(pod.Spec.RuntimeClassName)
	}
	if pod.Spec.RuntimeClassName != nil {
		return *pod.Spec.RuntimeClassName, nil
	}
	return "", nil
}

// generatePodSandboxConfig is the sandbox the pod asks for: its metadata (name, namespace,
// uid, attempt), hostname, log directory, DNS, port mappings (every container's hostPorts),
// labels and annotations, and the Linux part: cgroup parent by QoS class, namespaces,
// sysctls and the pod's security context.
func (m *Manager) generatePodSandboxConfig(ctx context.Context, pod *v1.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, error) {
	config := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name:      pod.Name,
			Namespace: pod.Namespace,
			Uid:       string(pod.UID),
			Attempt:   attempt,
		},
		LogDirectory: m.podLogsDir(pod.Namespace, pod.Name, string(pod.UID)),
		Labels:       newPodLabels(pod),
		Annotations:  pod.Annotations,
	}
	dns, err := m.podDNSConfig(ctx, pod)
	if err != nil {
		return nil, err
	}
	config.DnsConfig = dns
	if !pod.Spec.HostNetwork {
		hostname, domain, err := m.podHostnameAndDomain(ctx, pod)
		if err != nil {
			return nil, err
		}
		if domain != "" && pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN {
			fqdn := hostname + "." + domain
			if len(fqdn) > 64 {
				return nil, fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)", fqdn, 64, len(fqdn))
			}
			hostname = fqdn
		}
		config.Hostname = hostname
	}
	config.PortMappings = portMappings(ctx, pod)
	config.Linux = m.generatePodSandboxLinuxConfig(pod)
	return config, nil
}

// podHostnameAndDomain is the pod's hostname and domain, as the kubelet's
// GeneratePodHostNameAndDomain makes them: spec.hostnameOverride (a DNS subdomain) when set,
// with no domain, so that neither spec.hostname, spec.subdomain nor setHostnameAsFQDN has any
// effect; otherwise spec.hostname or the pod's name, with the domain
// <subdomain>.<ns>.svc.<cluster domain> when spec.subdomain is set. Either name is cut to 63
// characters.
func (m *Manager) podHostnameAndDomain(ctx context.Context, pod *v1.Pod) (string, string, error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, ";"))
		}
		hostname, err := truncatePodHostname(ctx, pod.Name, *o)
		return hostname, "", err
	}
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", pod.Spec.Hostname, strings.Join(msgs, ";"))
		}
		hostname = pod.Spec.Hostname
	}
	hostname, err := truncatePodHostname(ctx, pod.Name, hostname)
	if err != nil {
		return "", "", err
	}
	domain := ""
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", pod.Spec.Subdomain, strings.Join(msgs, ";"))
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, m.cfg.ClusterDomain)
	}
	return hostname, domain, nil
}

// truncatePodHostname cuts a hostname to the kernel's 63 characters (and then its trailing
// '-' and '.').
func truncatePodHostname(ctx context.Context, podName, hostname string) (string, error) {
	const hostnameMaxLen = 63
	if len(hostname) <= hostnameMaxLen {
		return hostname, nil
	}
	truncated := strings.TrimRight(hostname[:hostnameMaxLen], "-.")
	klog.FromContext(ctx).Error(nil, "Hostname for pod was too long, truncated it", "podName", podName, "hostnameMaxLen", hostnameMaxLen, "truncatedHostname", truncated)
	if truncated == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, hostname)
	}
	return truncated, nil
}

// portMappings are the host ports of the pod's containers; a port named twice in one
// container counts once.
func portMappings(ctx context.Context, pod *v1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		seen := map[string]bool{}
		for _, p := range c.Ports {
			name := p.Name
			if name == "" {
				family := "any"
				if ip := net.ParseIP(p.HostIP); ip != nil && ip.To4() == nil {
					family = "v6"
				} else if ip != nil {
					family = "v4"
				}
				name = fmt.Sprintf("%s-%s-%s:%d:%d", family, p.Protocol, p.HostIP, p.ContainerPort, p.HostPort)
			}
			if seen[name] {
				klog.FromContext(ctx).Info("Port name conflicted, it is defined more than once", "portName", name)
				continue
			}
			seen[name] = true
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      toRuntimeProtocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

func toRuntimeProtocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// generatePodSandboxLinuxConfig is the sandbox's Linux half. The sandbox runs with the
// runtime's default seccomp profile whatever the containers ask, as the kubelet's does.
func (m *Manager) generatePodSandboxLinuxConfig(pod *v1.Pod) *runtimeapi.LinuxPodSandboxConfig {
	lc := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: m.podCgroupParent(pod),
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			Privileged:       hasPrivilegedContainer(pod),
			Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			NamespaceOptions: namespacesForPod(pod),
		},
		Sysctls: map[string]string{},
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			// runc wants dots: "net/ipv4/ip_forward" is "net.ipv4.ip_forward".
			lc.Sysctls[normalizeSysctl(s.Name)] = s.Value
		}
		if sc.RunAsUser != nil {
			lc.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
		}
		if sc.RunAsGroup != nil {
			lc.SecurityContext.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
		}
		lc.SecurityContext.SupplementalGroups = podSupplementalGroups(sc)
		if sc.SELinuxOptions != nil {
			o := sc.SELinuxOptions
			lc.SecurityContext.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
		}
	}
	return lc
}

// normalizeSysctl gives runc the dotted form of a sysctl name: a name whose first separator
// is a slash ("net/ipv4/conf/eth0.100/forwarding") has its slashes and dots swapped.
func normalizeSysctl(name string) string {
	first := strings.IndexAny(name, "./")
	if first < 0 || name[first] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '/':
			return '.'
		case '.':
			return '/'
		}
		return r
	}, name)
}

func podSupplementalGroups(sc *v1.PodSecurityContext) []int64 {
	var groups []int64
	if sc.FSGroup != nil {
		groups = append(groups, *sc.FSGroup)
	}
	return append(groups, sc.SupplementalGroups...)
}

// namespacesForPod are the sandbox's namespaces: the node's network, PID and IPC namespaces
// when the pod asks for them; one PID namespace for the whole pod with
// shareProcessNamespace; otherwise a PID namespace per container.
func namespacesForPod(pod *v1.Pod) *runtimeapi.NamespaceOption {
	opts := &runtimeapi.NamespaceOption{
		Network: networkNamespaceMode(pod),
		Ipc:     runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
	}
	if pod.Spec.HostIPC {
		opts.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		opts.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		opts.Pid = runtimeapi.NamespaceMode_POD
	}
	return opts
}

func hasPrivilegedContainer(pod *v1.Pod) bool {
	privileged := func(c *v1.Container) bool {
		return c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	}
	for i := range pod.Spec.InitContainers {
		if privileged(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if privileged(&pod.Spec.Containers[i]) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if privileged((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)) {
			return true
		}
	}
	return false
}

// podSandboxIPs are the IPs the runtime (CNI) gave the sandbox, the primary one first.
func podSandboxIPs(ctx context.Context, s *runtimeapi.PodSandboxStatus) []string {
	ips := []string{}
	if s.GetNetwork() == nil {
		return ips
	}
	for _, ip := range append([]*runtimeapi.PodIP{{Ip: s.Network.Ip}}, s.Network.AdditionalIps...) {
		if ip.GetIp() == "" {
			continue
		}
		if net.ParseIP(ip.Ip) == nil {
			klog.FromContext(ctx).Info("Pod sandbox reported an unparseable IP", "pod", klog.KRef(s.GetMetadata().GetNamespace(), s.GetMetadata().GetName()), "ip", ip.Ip)
			return nil
		}
		ips = append(ips, ip.Ip)
	}
	return ips
}

// Package sysctl is the node agent's sysctl admission, one of the admit handlers that seed
// 003's HandlePodAdditions asks before a pod is dispatched: a pod may set only the sysctls
// this node allows, the safe ones (namespaced, and isolated from the other pods) and those the
// node's allowedUnsafeSysctls names, and none of a namespace the pod shares with the host. A
// pod that asks for another is rejected with SysctlForbidden, as the kubelet rejects it,
// before any of its containers is created.
package sysctl

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/admission"
)

// ForbiddenReason is the status reason of a pod rejected for its sysctls.
const ForbiddenReason = "SysctlForbidden"

// safeSysctl is a sysctl every pod may set, from the kernel version that namespaced it on
// ("" for all kernels).
type safeSysctl struct {
	name, since string
}

// safeSysctls are the kubelet's safe sysctls: namespaced in the pod's network or IPC
// namespace, and without effect on other pods.
var safeSysctls = []safeSysctl{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", since: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", since: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", since: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", since: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", since: "4.5"},
	{name: "net.ipv4.tcp_rmem", since: "4.15"},
	{name: "net.ipv4.tcp_wmem", since: "4.15"},
	{name: "net.ipv4.tcp_slow_start_after_idle", since: "4.15"},
	{name: "net.ipv4.tcp_notsent_lowat", since: "4.6"},
}

// SafeSysctls are the safe sysctls on a kernel of the given version. A sysctl namespaced only
// from some version on is left out on older kernels, and when the version is unknown (nil).
func SafeSysctls(kernel *version.Version) []string {
	var out []string
	for _, s := range safeSysctls {
		if s.since == "" || (kernel != nil && kernel.AtLeast(version.MustParseGeneric(s.since))) {
			out = append(out, s.name)
		}
	}
	return out
}

// KernelVersion is the running kernel's version, from /proc/sys/kernel/osrelease.
func KernelVersion() (*version.Version, error) {
	data, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return nil, fmt.Errorf("reading the kernel version: %w", err)
	}
	v, err := version.ParseGeneric(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("parsing the kernel version %q: %w", strings.TrimSpace(string(data)), err)
	}
	return v, nil
}

// NodeAllowlist is the allowlist of this node: the safe sysctls of its kernel and the
// node's allowed unsafe ones. An unreadable kernel version only drops the sysctls that need
// a known version.
func NodeAllowlist(logger klog.Logger, allowedUnsafe []string) (*Allowlist, error) {
	kernel, err := KernelVersion()
	if err != nil {
		logger.Error(err, "Failed to get kernel version, unable to determine which sysctls are available")
	}
	return NewAllowlist(append(SafeSysctls(kernel), allowedUnsafe...))
}

// patternMaxLength and patternRegexp are what a sysctl or sysctl pattern (a trailing *
// matches any rest) must be: dot- or slash-separated segments of lower-case letters, digits,
// dashes and underscores.
const patternMaxLength = 253

const patternFmt = `([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]`

var patternRegexp = regexp.MustCompile("^" + patternFmt + "$")

// Allowlist admits a pod whose sysctls all match one of its entries, each of a known kernel
// namespace: a name, or a prefix (a pattern ending in *).
type Allowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

var _ admission.PodAdmitHandler = &Allowlist{}

// NewAllowlist builds an allowlist of sysctls and sysctl patterns; each must be valid and of
// a namespace the kernel is known to have (a sysctl that is not namespaced would change the
// node itself).
func NewAllowlist(patterns []string) (*Allowlist, error) {
	w := &Allowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		if len(p) > patternMaxLength || !patternRegexp.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", p, patternMaxLength, patternFmt)
		}
		ns, nameOrPrefix, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", nameOrPrefix)
		}
		if prefixed {
			w.prefixes[nameOrPrefix] = ns
		} else {
			w.names[nameOrPrefix] = ns
		}
	}
	return w, nil
}

// Admit rejects a pod with a sysctl the list does not allow, or one of a namespace the pod
// shares with the host (hostNetwork, hostIPC, or the host's user namespace, which a pod shares
// unless hostUsers is false).
func (w *Allowlist) Admit(attrs *admission.PodAdmitAttributes) admission.PodAdmitResult {
	pod := attrs.Pod
	sc := pod.Spec.SecurityContext
	if sc == nil || len(sc.Sysctls) == 0 {
		return admission.PodAdmitResult{Admit: true}
	}
	shared := map[utilsysctl.Namespace]bool{
		utilsysctl.NetNamespace:  pod.Spec.HostNetwork,
		utilsysctl.IPCNamespace:  pod.Spec.HostIPC,
		utilsysctl.UserNamespace: pod.Spec.HostUsers == nil || *pod.Spec.HostUsers,
	}
	for _, s := range sc.Sysctls {
		if err := w.check(s.Name, shared); err != nil {
			return admission.PodAdmitResult{Reason: ForbiddenReason, Message: fmt.Sprintf("forbidden sysctl: %v", err)}
		}
	}
	return admission.PodAdmitResult{Admit: true}
}

// check allows a sysctl (in either separator form) by its exact name first, then by prefix.
func (w *Allowlist) check(name string, shared map[utilsysctl.Namespace]bool) error {
	name = utilsysctl.NormalizeName(name)
	ns, found := w.names[name]
	if !found {
		for p, pns := range w.prefixes {
			if strings.HasPrefix(name, p) {
				ns, found = pns, true
				break
			}
		}
	}
	if !found {
		return fmt.Errorf("%q not allowlisted", name)
	}
	if shared[ns] {
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}

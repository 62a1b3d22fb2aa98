package kuberuntime

import (
	"context"
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/qos"
)

// The kernel's CPU accounting units, as the kubelet converts to them.
const (
	minShares      = 2
	maxShares      = 262144
	sharesPerCPU   = 1024
	quotaPeriod    = 100000 // 100 ms, in µs
	minQuotaPeriod = 1000

	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// milliCPUToShares converts a cpu request to cpu.shares; no request is the minimum.
func milliCPUToShares(milliCPU int64) int64 {
	if milliCPU == 0 {
		return minShares
	}
	shares := milliCPU * sharesPerCPU / 1000
	return min(max(shares, minShares), maxShares)
}

// milliCPUToQuota converts a cpu limit to a CFS quota per period; no limit is no quota.
func milliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/1000, minQuotaPeriod)
}

// containerResources are the container's Linux resources: cpu shares from its cpu request
// (its limit when it requests nothing), a CFS quota from its cpu limit, its memory limit
// (and no swap beyond it), and the oom_score_adj of its QoS class.
func (m *Manager) containerResources(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	cpuLimit := c.Resources.Limits.Cpu().MilliValue()
	cpuRequest := cpuLimit
	if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
		cpuRequest = q.MilliValue()
	}
	r.CpuShares = milliCPUToShares(cpuRequest)
	if !m.cfg.DisableCPUCFSQuota {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = milliCPUToQuota(cpuLimit, quotaPeriod)
	}
	r.MemoryLimitInBytes = c.Resources.Limits.Memory().Value()
	if m.swapAccounting && r.MemoryLimitInBytes > 0 {
		r.MemorySwapLimitInBytes = r.MemoryLimitInBytes // NoSwap
	}
	r.OomScoreAdj = int64(oomScoreAdj(pod, c, m.memoryCapacity))
	return r
}

// oomScoreAdj ranks the container for the OOM killer by QoS: Guaranteed -997, BestEffort
// 1000, Burstable between (2 to 999) the less memory it requests the closer to 1000. A
// sidecar scores no higher than the app container requesting the least memory.
func oomScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int {
	switch qos.PodQOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return besteffortOOMScoreAdj - 1
	}
	score := func(request int64) int64 { return 1000 - 1000*request/memoryCapacity }
	adj := score(c.Resources.Requests.Memory().Value())
	if isSidecarOf(pod, c) {
		least := int64(-1)
		for i := range pod.Spec.Containers {
			if r := pod.Spec.Containers[i].Resources.Requests.Memory().Value(); least < 0 || r < least {
				least = r
			}
		}
		if least >= 0 {
			adj = min(adj, score(least))
		}
	}
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj
	}
	if adj == besteffortOOMScoreAdj {
		return int(adj - 1)
	}
	return int(adj)
}

func isSidecarOf(pod *v1.Pod, c *v1.Container) bool {
	if !isSidecar(c) {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

// effectiveSecurityContext is the container's security context over the pod's.
func effectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	sc := &v1.SecurityContext{}
	if c.SecurityContext != nil {
		sc = c.SecurityContext.DeepCopy()
	}
	if p := pod.Spec.SecurityContext; p != nil {
		if sc.RunAsUser == nil {
			sc.RunAsUser = p.RunAsUser
		}
		if sc.RunAsGroup == nil {
			sc.RunAsGroup = p.RunAsGroup
		}
		if sc.RunAsNonRoot == nil {
			sc.RunAsNonRoot = p.RunAsNonRoot
		}
		if sc.SELinuxOptions == nil {
			sc.SELinuxOptions = p.SELinuxOptions
		}
		if sc.SeccompProfile == nil {
			sc.SeccompProfile = p.SeccompProfile
		}
	}
	return sc
}

// containerSecurityContext is the container's Linux security context: privileges,
// capabilities, user and groups, read-only root, no_new_privs, seccomp and namespaces.
func (m *Manager) containerSecurityContext(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerSecurityContext {
	sc := effectiveSecurityContext(pod, c)
	out := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: namespacesForPod(pod),
		Seccomp:          m.seccompProfile(sc.SeccompProfile),
	}
	if sc.Capabilities != nil {
		out.Capabilities = &runtimeapi.Capability{}
		for _, cap := range sc.Capabilities.Add {
			out.Capabilities.AddCapabilities = append(out.Capabilities.AddCapabilities, string(cap))
		}
		for _, cap := range sc.Capabilities.Drop {
			out.Capabilities.DropCapabilities = append(out.Capabilities.DropCapabilities, string(cap))
		}
	}
	if sc.Privileged != nil {
		out.Privileged = *sc.Privileged
	}
	if sc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
	}
	if sc.ReadOnlyRootFilesystem != nil {
		out.ReadonlyRootfs = *sc.ReadOnlyRootFilesystem
	}
	if sc.AllowPrivilegeEscalation != nil {
		out.NoNewPrivs = !*sc.AllowPrivilegeEscalation
	}
	if o := sc.SELinuxOptions; o != nil {
		out.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
	}
	if sc.ProcMount != nil && *sc.ProcMount == v1.UnmaskedProcMount {
		out.MaskedPaths, out.ReadonlyPaths = []string{}, []string{}
	}
	if p := pod.Spec.SecurityContext; p != nil {
		out.SupplementalGroups = podSupplementalGroups(p)
	}
	return out
}

// seccompProfile is the CRI form of a seccomp profile; with none, the runtime's default
// when SeccompDefault is set, unconfined otherwise. Localhost profiles live under
// RootDir/seccomp.
func (m *Manager) seccompProfile(p *v1.SeccompProfile) *runtimeapi.SecurityProfile {
	if p == nil {
		if m.cfg.SeccompDefault {
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case v1.SeccompProfileTypeLocalhost:
		path := ""
		if p.LocalhostProfile != nil {
			path = filepath.Join(m.cfg.RootDir, "seccomp", *p.LocalhostProfile)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: path}
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
}

// verifyRunAsNonRoot refuses a runAsNonRoot container that would run as root: by its
// runAsUser, or else by its image's user.
func (m *Manager) verifyRunAsNonRoot(ctx context.Context, pod *v1.Pod, c *v1.Container, imageRef string) error {
	sc := effectiveSecurityContext(pod, c)
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podDesc(pod), c.Name)
		}
		return nil
	}
	resp, err := m.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: imageRef}, false)
	if err != nil {
		return fmt.Errorf("reading the user of image %q: %w", c.Image, err)
	}
	img := resp.GetImage()
	switch {
	case img.GetUid() != nil && img.Uid.Value == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(pod), c.Name)
	case img.GetUid() == nil && img.GetUsername() != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", img.Username, podDesc(pod), c.Name)
	case img.GetUid() == nil:
		// No user in the image: it runs as root.
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(pod), c.Name)
	}
	return nil
}

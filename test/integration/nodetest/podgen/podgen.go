// Package podgen generates random pods from a seed with sigs.k8s.io/randfill, for running
// through the node agent (test/integration/nodetest, test/e2e): the parts of a pod a node
// agent acts on (containers' probes, lifecycle hooks, security contexts, resources, env,
// volume mounts; the pod's volumes, security context, affinity, topology spread,
// tolerations; ephemeral containers) are filled at random, with enumerations drawn from their
// valid values and names, paths and ports fixed, so that most pods pass the API's
// validation while optional pointers stay random. Pod i of a seed is the same pod on every
// run (its own random source), so a failing pod is reproduced from its seed and index.
package podgen

import (
	"fmt"
	"math/rand"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"
)

// Options shape the generated pods.
type Options struct {
	// Images are the images containers use; a few get the in-memory runtime's fail-pull
	// marker when FailPulls is set.
	Images []string
	// Script sets the in-memory runtime's sim.berth.dev/ annotations at random (run times,
	// exit codes, failed starts, OOM kills, failing exec commands).
	Script bool
	// FailPulls makes about 2 % of containers use an image whose pull fails.
	FailPulls bool
	// HostPathDir is where hostPath volumes point (a temp dir); "" leaves hostPath out.
	HostPathDir string
	// Command, when set, is the command of every container that would otherwise run its
	// image's (a real runtime needs one that exists in the image).
	Command func(r *rand.Rand) []string
	// InitCommand is the command of plain (not restartable) init containers, which must end
	// for the pod to start; nil uses Command.
	InitCommand func(r *rand.Rand) []string
}

// Generator makes the pods of one seed.
type Generator struct {
	Seed int64
	opts Options
}

// New returns the generator of seed.
func New(seed int64, opts Options) *Generator {
	if len(opts.Images) == 0 {
		opts.Images = []string{"busybox:1.36", "nginx:1.27", "registry.k8s.io/pause:3.10", "example.com/app@sha256:" + strings.Repeat("ab", 32)}
	}
	return &Generator{Seed: seed, opts: opts}
}

// Pod is pod i of the seed, named name-<i> in namespace and bound to nodeName.
func (g *Generator) Pod(i int, namespace, nodeName string) *v1.Pod {
	r := rand.New(rand.NewSource(g.Seed*1_000_003 + int64(i)))
	f := g.filler(r)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("gen-%d", i),
			Namespace: namespace,
			Labels:    map[string]string{"app": pick(r, "a", "b", "c"), "gen": "true"},
		},
	}
	spec := &pod.Spec
	spec.NodeName = nodeName
	spec.RestartPolicy = pick(r, v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever)
	spec.TerminationGracePeriodSeconds = ptr.To(int64(r.Intn(3)))
	if r.Intn(10) == 0 {
		spec.ActiveDeadlineSeconds = ptr.To(int64(1 + r.Intn(20)))
	}
	spec.Volumes = g.volumes(r, f)
	for j := range 1 + r.Intn(3) {
		spec.Containers = append(spec.Containers, g.container(r, f, fmt.Sprintf("c%d", j), spec.Volumes, true))
	}
	for j := range r.Intn(3) {
		c := g.container(r, f, fmt.Sprintf("init%d", j), spec.Volumes, false)
		if g.opts.InitCommand != nil {
			c.Command = g.opts.InitCommand(r)
		}
		if r.Intn(3) == 0 {
			// A sidecar: a restartable init container, which may have probes and hooks.
			c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
			g.probesAndHooks(r, f, &c)
		}
		spec.InitContainers = append(spec.InitContainers, c)
	}
	if r.Intn(2) == 0 {
		spec.SecurityContext = &v1.PodSecurityContext{}
		f.Fill(spec.SecurityContext)
		fixPodSecurityContext(r, spec.SecurityContext)
	}
	if r.Intn(3) == 0 {
		spec.Affinity = &v1.Affinity{}
		f.Fill(spec.Affinity)
		fixAffinity(spec.Affinity)
	}
	if r.Intn(3) == 0 {
		f.Fill(&spec.TopologySpreadConstraints)
		for k := range spec.TopologySpreadConstraints {
			fixSpread(r, &spec.TopologySpreadConstraints[k])
		}
	}
	if r.Intn(3) == 0 {
		f.Fill(&spec.Tolerations)
		for k := range spec.Tolerations {
			fixToleration(r, &spec.Tolerations[k])
		}
	}
	if r.Intn(4) == 0 {
		spec.DNSPolicy = pick(r, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone)
		if spec.DNSPolicy == v1.DNSNone || r.Intn(2) == 0 {
			spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"10.0.0.53"}, Searches: []string{"svc.example"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}}
		}
	}
	if r.Intn(5) == 0 {
		spec.Hostname, spec.Subdomain = randLabel(r), randLabel(r)
	}
	if r.Intn(10) == 0 {
		spec.HostAliases = []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"alias." + randLabel(r)}}}
	}
	if g.opts.Script {
		pod.Annotations = g.script(r, pod)
	}
	return pod
}

// EphemeralContainers are the ephemeral containers to add to pod i once it exists (the API
// refuses them at creation), or none.
func (g *Generator) EphemeralContainers(i int, pod *v1.Pod) []v1.EphemeralContainer {
	r := rand.New(rand.NewSource(g.Seed*1_000_003 + int64(i) + 7_777_777))
	if r.Intn(8) != 0 {
		return nil
	}
	f := g.filler(r)
	c := g.container(r, f, "debug", pod.Spec.Volumes, false)
	// Ephemeral containers have no ports, probes, hooks, resources or restart policy.
	c.Ports, c.Resources, c.ResizePolicy, c.RestartPolicy = nil, v1.ResourceRequirements{}, nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	for k := range c.VolumeMounts {
		c.VolumeMounts[k].SubPath, c.VolumeMounts[k].SubPathExpr = "", ""
	}
	ec := v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon(c)}
	if r.Intn(2) == 0 {
		ec.TargetContainerName = pod.Spec.Containers[0].Name
	}
	return []v1.EphemeralContainer{ec}
}

// filler fills from r, with strings, numbers, quantities and enumerations kept in range.
func (g *Generator) filler(r *rand.Rand) *randfill.Filler {
	return randfill.New().RandSource(r).NilChance(0.5).NumElements(0, 2).MaxDepth(8).Funcs(
		func(s *string, c randfill.Continue) { *s = randLabel(c.Rand) },
		func(n *int32, c randfill.Continue) { *n = int32(c.Rand.Intn(5)) },
		func(n *int64, c randfill.Continue) { *n = int64(c.Rand.Intn(5)) },
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(int64(1+c.Rand.Intn(2000)), resource.DecimalSI)
		},
		func(l *v1.ResourceList, c randfill.Continue) {
			*l = v1.ResourceList{}
			for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
				if c.Rand.Intn(2) == 0 {
					continue
				}
				if name == v1.ResourceCPU {
					(*l)[name] = *resource.NewMilliQuantity(int64(1+c.Rand.Intn(2000)), resource.DecimalSI)
				} else {
					(*l)[name] = *resource.NewQuantity(int64(1+c.Rand.Intn(512))<<20, resource.BinarySI)
				}
			}
		},
		func(x *intstr.IntOrString, c randfill.Continue) {
			if c.Rand.Intn(2) == 0 {
				*x = intstr.FromInt32(int32(1 + c.Rand.Intn(65535)))
			} else {
				*x = intstr.FromString("http")
			}
		},
		func(t *metav1.Time, c randfill.Continue) {},
		func(p *v1.PullPolicy, c randfill.Continue) {
			*p = pick(c.Rand, v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)
		},
		func(p *v1.TerminationMessagePolicy, c randfill.Continue) {
			*p = pick(c.Rand, v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError)
		},
		func(p *v1.Protocol, c randfill.Continue) {
			*p = pick(c.Rand, v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP)
		},
		func(p *v1.URIScheme, c randfill.Continue) { *p = pick(c.Rand, v1.URISchemeHTTP, v1.URISchemeHTTPS) },
		func(p *v1.HTTPProtocol, c randfill.Continue) {
			*p = pick(c.Rand, v1.HTTPProtocolHTTP1, v1.HTTPProtocolHTTP2)
		},
		func(p *v1.Capability, c randfill.Continue) {
			*p = pick[v1.Capability](c.Rand, "NET_ADMIN", "SYS_TIME", "CHOWN", "NET_RAW", "ALL")
		},
		func(p *v1.ProcMountType, c randfill.Continue) { *p = v1.DefaultProcMount },
		func(p *v1.SeccompProfileType, c randfill.Continue) {
			*p = pick(c.Rand, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined)
		},
		func(p *v1.AppArmorProfileType, c randfill.Continue) {
			*p = pick(c.Rand, v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined)
		},
		func(p *v1.SeccompProfile, c randfill.Continue) {
			p.Type = pick(c.Rand, v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined)
		},
		func(p *v1.AppArmorProfile, c randfill.Continue) {
			p.Type = pick(c.Rand, v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined)
		},
		func(p *v1.SELinuxOptions, c randfill.Continue) { p.Level = pick(c.Rand, "", "s0:c1,c2") },
		func(p *v1.WindowsSecurityContextOptions, c randfill.Continue) {},
		func(p *v1.StorageMedium, c randfill.Continue) {
			*p = pick(c.Rand, v1.StorageMediumDefault, v1.StorageMediumMemory)
		},
		func(p *v1.HostPathType, c randfill.Continue) {
			*p = pick(c.Rand, v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory)
		},
		func(p *v1.NodeSelectorOperator, c randfill.Continue) {
			*p = pick(c.Rand, v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist)
		},
		func(p *metav1.LabelSelectorOperator, c randfill.Continue) {
			*p = pick(c.Rand, metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist)
		},
		func(p *v1.UnsatisfiableConstraintAction, c randfill.Continue) {
			*p = pick(c.Rand, v1.DoNotSchedule, v1.ScheduleAnyway)
		},
		func(p *v1.NodeInclusionPolicy, c randfill.Continue) {
			*p = pick(c.Rand, v1.NodeInclusionPolicyHonor, v1.NodeInclusionPolicyIgnore)
		},
		func(p *v1.TolerationOperator, c randfill.Continue) {
			*p = pick(c.Rand, v1.TolerationOpExists, v1.TolerationOpEqual)
		},
		func(p *v1.TaintEffect, c randfill.Continue) {
			*p = pick(c.Rand, v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute)
		},
		func(p *v1.PodFSGroupChangePolicy, c randfill.Continue) {
			*p = pick(c.Rand, v1.FSGroupChangeOnRootMismatch, v1.FSGroupChangeAlways)
		},
		func(p *v1.SupplementalGroupsPolicy, c randfill.Continue) { *p = v1.SupplementalGroupsPolicyMerge },
		func(p *v1.PodSELinuxChangePolicy, c randfill.Continue) { *p = v1.SELinuxChangePolicyMountOption },
		func(p *v1.Signal, c randfill.Continue) { *p = pick(c.Rand, v1.SIGTERM, v1.SIGKILL, v1.SIGINT) },
		func(p *v1.MountPropagationMode, c randfill.Continue) { *p = v1.MountPropagationNone },
		func(p *v1.RecursiveReadOnlyMode, c randfill.Continue) { *p = v1.RecursiveReadOnlyDisabled },
		func(p *v1.ResourceResizeRestartPolicy, c randfill.Continue) { *p = v1.NotRequired },
		func(p *v1.ContainerRestartPolicy, c randfill.Continue) {},
		func(p *[]v1.ContainerRestartRule, c randfill.Continue) {},
		func(p *[]v1.ResourceClaim, c randfill.Continue) {},
		func(p *[]v1.VolumeDevice, c randfill.Continue) {},
		func(p *v1.GRPCAction, c randfill.Continue) { p.Port = int32(1 + c.Rand.Intn(65535)) },
		func(p *v1.SleepAction, c randfill.Continue) { p.Seconds = int64(c.Rand.Intn(2)) },
	)
}

// container is a container named name: the fields a node agent acts on filled at random.
// App containers get probes and lifecycle hooks; init containers do not (a sidecar gets
// them from the caller).
func (g *Generator) container(r *rand.Rand, f *randfill.Filler, name string, volumes []v1.Volume, app bool) v1.Container {
	c := v1.Container{Name: name, Image: pick(r, g.opts.Images...)}
	if g.opts.FailPulls && r.Intn(50) == 0 {
		c.Image = "example.com/fail-pull/app:1"
	}
	if g.opts.Command != nil {
		c.Command = g.opts.Command(r)
	} else if r.Intn(2) == 0 {
		f.Fill(&c.Command)
		f.Fill(&c.Args)
	}
	if r.Intn(3) == 0 {
		c.WorkingDir = "/" + randLabel(r)
	}
	f.Fill(&c.ImagePullPolicy)
	f.Fill(&c.TerminationMessagePolicy)
	if r.Intn(3) == 0 {
		c.TerminationMessagePath = "/dev/termination-" + randLabel(r)
	}
	c.Env = randomEnv(r, c.Name)
	f.Fill(&c.Resources)
	fixResources(&c.Resources)
	if r.Intn(2) == 0 {
		c.SecurityContext = &v1.SecurityContext{}
		f.Fill(c.SecurityContext)
		fixSecurityContext(r, c.SecurityContext)
	}
	for k := range r.Intn(3) {
		c.Ports = append(c.Ports, v1.ContainerPort{Name: fmt.Sprintf("p%d", k), ContainerPort: int32(8000 + k), Protocol: pick(r, v1.ProtocolTCP, v1.ProtocolUDP)})
	}
	if len(c.Ports) > 0 && r.Intn(2) == 0 {
		c.Ports[0].Name = "http"
	}
	for _, v := range volumes {
		if r.Intn(2) == 0 {
			continue
		}
		m := v1.VolumeMount{Name: v.Name, MountPath: "/mnt/" + v.Name, ReadOnly: r.Intn(3) == 0}
		if r.Intn(5) == 0 {
			m.SubPath = randLabel(r)
		}
		c.VolumeMounts = append(c.VolumeMounts, m)
	}
	c.Stdin, c.TTY = r.Intn(10) == 0, r.Intn(10) == 0
	if app {
		g.probesAndHooks(r, f, &c)
	}
	return c
}

// probesAndHooks fills a container's probes and lifecycle hooks, each with one handler.
func (g *Generator) probesAndHooks(r *rand.Rand, f *randfill.Filler, c *v1.Container) {
	for _, p := range []**v1.Probe{&c.LivenessProbe, &c.ReadinessProbe, &c.StartupProbe} {
		if r.Intn(2) == 0 {
			continue
		}
		*p = &v1.Probe{}
		f.Fill(*p)
		fixProbe(r, *p, c)
	}
	if p := c.ReadinessProbe; p != nil {
		p.TerminationGracePeriodSeconds = nil // liveness and startup probes only
	}
	if p := c.LivenessProbe; p != nil {
		p.SuccessThreshold = 1
	}
	if p := c.StartupProbe; p != nil {
		p.SuccessThreshold = 1
	}
	if r.Intn(2) == 0 {
		c.Lifecycle = &v1.Lifecycle{}
		f.Fill(c.Lifecycle)
		for _, h := range []**v1.LifecycleHandler{&c.Lifecycle.PostStart, &c.Lifecycle.PreStop} {
			if *h != nil {
				fixHandler(r, *h, c)
			}
		}
		if c.Lifecycle.StopSignal != nil {
			c.Lifecycle.StopSignal = nil // needs spec.os.name
		}
	}
}

func fixProbe(r *rand.Rand, p *v1.Probe, c *v1.Container) {
	h := &v1.LifecycleHandler{Exec: p.Exec, HTTPGet: p.HTTPGet, TCPSocket: p.TCPSocket}
	fixHandler(r, h, c)
	p.Exec, p.HTTPGet, p.TCPSocket, p.GRPC = h.Exec, h.HTTPGet, h.TCPSocket, nil
	if p.Exec == nil && p.HTTPGet == nil && p.TCPSocket == nil {
		p.GRPC = &v1.GRPCAction{Port: 9000}
	}
	p.TimeoutSeconds = max(p.TimeoutSeconds, 1)
	p.PeriodSeconds = max(p.PeriodSeconds, 1)
	p.SuccessThreshold = max(p.SuccessThreshold, 1)
	p.FailureThreshold = max(p.FailureThreshold, 1)
	if p.TerminationGracePeriodSeconds != nil {
		*p.TerminationGracePeriodSeconds = max(*p.TerminationGracePeriodSeconds, 1)
	}
}

// fixHandler leaves one action of the handler (exec, httpGet, tcpSocket, sleep), valid.
func fixHandler(r *rand.Rand, h *v1.LifecycleHandler, c *v1.Container) {
	port := intstr.FromInt32(int32(8000 + r.Intn(3)))
	if len(c.Ports) > 0 && r.Intn(2) == 0 {
		port = intstr.FromString(c.Ports[0].Name)
	}
	switch {
	case h.Exec != nil:
		h.HTTPGet, h.TCPSocket, h.Sleep = nil, nil, nil
		if len(h.Exec.Command) == 0 {
			h.Exec.Command = []string{"true"}
		}
	case h.HTTPGet != nil:
		h.TCPSocket, h.Sleep = nil, nil
		h.HTTPGet.Port = port
		h.HTTPGet.Path = "/" + randLabel(r)
		h.HTTPGet.Host = ""
		if p := h.HTTPGet.Protocol; p != nil && *p == v1.HTTPProtocolHTTP2 {
			h.HTTPGet.Scheme = v1.URISchemeHTTP
		}
		for k := range h.HTTPGet.HTTPHeaders {
			h.HTTPGet.HTTPHeaders[k].Name = "X-" + randLabel(r)
		}
	case h.TCPSocket != nil:
		h.Sleep = nil
		h.TCPSocket.Port = port
		h.TCPSocket.Host = ""
	case h.Sleep != nil:
	default:
		h.Exec = &v1.ExecAction{Command: []string{"sh", "-c", "exit 0"}}
	}
}

func fixResources(res *v1.ResourceRequirements) {
	res.Claims = nil
	for name, limit := range res.Limits {
		if req, ok := res.Requests[name]; ok && req.Cmp(limit) > 0 {
			res.Requests[name] = limit
		}
	}
}

func fixSecurityContext(r *rand.Rand, sc *v1.SecurityContext) {
	if sc.Privileged != nil && *sc.Privileged {
		sc.AllowPrivilegeEscalation = nil
	}
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Capabilities != nil {
			sc.Capabilities.Add = nil
		}
	}
	sc.WindowsOptions, sc.ProcMount = nil, nil
	if sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && r.Intn(2) == 0 {
		sc.RunAsUser = ptr.To(int64(1000 + r.Intn(10)))
	}
	if sc.SELinuxOptions != nil && sc.SELinuxOptions.Level == "" {
		sc.SELinuxOptions = nil
	}
}

func fixPodSecurityContext(r *rand.Rand, sc *v1.PodSecurityContext) {
	sc.WindowsOptions = nil
	sc.SELinuxChangePolicy, sc.SupplementalGroupsPolicy = nil, nil
	for k := range sc.Sysctls {
		sc.Sysctls[k] = v1.Sysctl{Name: pick(r, "net.ipv4.ip_local_port_range", "kernel.shm_rmid_forced", "net.ipv4.tcp_syncookies"), Value: "1"}
	}
	if len(sc.Sysctls) > 1 {
		sc.Sysctls = sc.Sysctls[:1]
	}
	if sc.SELinuxOptions != nil && sc.SELinuxOptions.Level == "" {
		sc.SELinuxOptions = nil
	}
}

func fixAffinity(a *v1.Affinity) {
	if n := a.NodeAffinity; n != nil {
		if s := n.RequiredDuringSchedulingIgnoredDuringExecution; s != nil {
			// The node is bound already; a required term it does not match would be refused
			// at admission (NodeAffinity), which is a valid end too. Keep it matchable.
			s.NodeSelectorTerms = []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/os", Operator: v1.NodeSelectorOpIn, Values: []string{"linux"}}}}}
		}
		for k := range n.PreferredDuringSchedulingIgnoredDuringExecution {
			t := &n.PreferredDuringSchedulingIgnoredDuringExecution[k]
			t.Weight = 1 + t.Weight%100
			fixNodeSelectorTerm(&t.Preference)
		}
	}
	for _, terms := range []*[]v1.PodAffinityTerm{podAffinityRequired(a.PodAffinity), podAffinityRequired(a.PodAntiAffinity)} {
		if terms != nil {
			*terms = nil // the scheduler's business; bound pods skip it
		}
	}
	for _, weighted := range []*[]v1.WeightedPodAffinityTerm{podAffinityPreferred(a.PodAffinity), podAffinityPreferred(a.PodAntiAffinity)} {
		if weighted == nil {
			continue
		}
		for k := range *weighted {
			w := &(*weighted)[k]
			w.Weight = 1 + w.Weight%100
			w.PodAffinityTerm.TopologyKey = "kubernetes.io/hostname"
			w.PodAffinityTerm.MatchLabelKeys, w.PodAffinityTerm.MismatchLabelKeys = nil, nil
			fixLabelSelector(w.PodAffinityTerm.LabelSelector)
			fixLabelSelector(w.PodAffinityTerm.NamespaceSelector)
		}
	}
}

func podAffinityRequired(a interface{}) *[]v1.PodAffinityTerm {
	switch a := a.(type) {
	case *v1.PodAffinity:
		if a != nil {
			return &a.RequiredDuringSchedulingIgnoredDuringExecution
		}
	case *v1.PodAntiAffinity:
		if a != nil {
			return &a.RequiredDuringSchedulingIgnoredDuringExecution
		}
	}
	return nil
}

func podAffinityPreferred(a interface{}) *[]v1.WeightedPodAffinityTerm {
	switch a := a.(type) {
	case *v1.PodAffinity:
		if a != nil {
			return &a.PreferredDuringSchedulingIgnoredDuringExecution
		}
	case *v1.PodAntiAffinity:
		if a != nil {
			return &a.PreferredDuringSchedulingIgnoredDuringExecution
		}
	}
	return nil
}

func fixNodeSelectorTerm(t *v1.NodeSelectorTerm) {
	t.MatchFields = nil
	for k := range t.MatchExpressions {
		e := &t.MatchExpressions[k]
		e.Key = "example.com/" + e.Key
		switch e.Operator {
		case v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist:
			e.Values = nil
		default:
			if len(e.Values) == 0 {
				e.Values = []string{"x"}
			}
		}
	}
}

func fixLabelSelector(s *metav1.LabelSelector) {
	if s == nil {
		return
	}
	for k := range s.MatchExpressions {
		e := &s.MatchExpressions[k]
		switch e.Operator {
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
			e.Values = nil
		default:
			if len(e.Values) == 0 {
				e.Values = []string{"x"}
			}
		}
	}
}

func fixSpread(r *rand.Rand, s *v1.TopologySpreadConstraint) {
	s.MaxSkew = 1 + s.MaxSkew
	s.TopologyKey = pick(r, "kubernetes.io/hostname", "topology.kubernetes.io/zone")
	fixLabelSelector(s.LabelSelector)
	s.MatchLabelKeys = nil
	if s.MinDomains != nil {
		if s.WhenUnsatisfiable != v1.DoNotSchedule {
			s.MinDomains = nil
		} else {
			*s.MinDomains = 1 + *s.MinDomains
		}
	}
}

func fixToleration(r *rand.Rand, t *v1.Toleration) {
	t.Key = pick(r, "", "node.kubernetes.io/not-ready", "example.com/"+randLabel(r))
	if t.Operator == v1.TolerationOpExists {
		t.Value = ""
	}
	if t.Key == "" {
		t.Operator = v1.TolerationOpExists
		t.Value = ""
	}
	if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
		t.TolerationSeconds = nil
	}
}

// volumes are 0 to 3 volumes of the kinds the node agent supports.
func (g *Generator) volumes(r *rand.Rand, f *randfill.Filler) []v1.Volume {
	var out []v1.Volume
	for k := range r.Intn(4) {
		v := v1.Volume{Name: fmt.Sprintf("v%d", k)}
		kinds := []string{"emptyDir", "configMap", "secret", "projected", "downwardAPI"}
		if g.opts.HostPathDir != "" {
			kinds = append(kinds, "hostPath")
		}
		switch pick(r, kinds...) {
		case "emptyDir":
			v.EmptyDir = &v1.EmptyDirVolumeSource{}
			f.Fill(v.EmptyDir)
			if v.EmptyDir.SizeLimit != nil {
				*v.EmptyDir.SizeLimit = *resource.NewQuantity(int64(1+r.Intn(64))<<20, resource.BinarySI)
			}
		case "hostPath":
			v.HostPath = &v1.HostPathVolumeSource{Path: g.opts.HostPathDir + "/" + randLabel(r)}
			f.Fill(&v.HostPath.Type)
			if v.HostPath.Type != nil && *v.HostPath.Type == v1.HostPathDirectory {
				v.HostPath.Path = g.opts.HostPathDir
			}
		case "configMap":
			v.ConfigMap = &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: objectName(r)}}
			v.ConfigMap.Optional = optionalBool(r)
			v.ConfigMap.Items = keyItems(r)
			v.ConfigMap.DefaultMode = mode(r)
		case "secret":
			v.Secret = &v1.SecretVolumeSource{SecretName: objectName(r)}
			v.Secret.Optional = optionalBool(r)
			v.Secret.Items = keyItems(r)
			v.Secret.DefaultMode = mode(r)
		case "downwardAPI":
			v.DownwardAPI = &v1.DownwardAPIVolumeSource{Items: downwardItems(r), DefaultMode: mode(r)}
		case "projected":
			p := &v1.ProjectedVolumeSource{DefaultMode: mode(r)}
			for j := range 1 + r.Intn(3) {
				switch r.Intn(4) {
				case 0:
					p.Sources = append(p.Sources, v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "present"}, Items: prefixItems(keyItems(r), j), Optional: optionalBool(r)}})
				case 1:
					p.Sources = append(p.Sources, v1.VolumeProjection{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: objectName(r)}, Items: prefixItems(keyItems(r), j), Optional: optionalBool(r)}})
				case 2:
					items := downwardItems(r)
					for n := range items {
						items[n].Path = fmt.Sprintf("s%d/%s", j, items[n].Path)
					}
					p.Sources = append(p.Sources, v1.VolumeProjection{DownwardAPI: &v1.DownwardAPIProjection{Items: items}})
				default:
					if hasToken(p) {
						continue
					}
					p.Sources = append(p.Sources, v1.VolumeProjection{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: fmt.Sprintf("s%d/token", j), ExpirationSeconds: ptr.To(int64(3600))}})
				}
			}
			// Items of different sources without items of their own would collide on keys.
			for j := range p.Sources {
				if s := p.Sources[j].ConfigMap; s != nil && len(s.Items) == 0 {
					s.Items = []v1.KeyToPath{{Key: "k", Path: fmt.Sprintf("s%d/k", j)}}
				}
				if s := p.Sources[j].Secret; s != nil && len(s.Items) == 0 {
					s.Items = []v1.KeyToPath{{Key: "k", Path: fmt.Sprintf("s%d/k", j)}}
				}
			}
			v.Projected = p
		}
		out = append(out, v)
	}
	return out
}

func hasToken(p *v1.ProjectedVolumeSource) bool {
	for _, s := range p.Sources {
		if s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

// objectName names the ConfigMap or Secret "present" (which the tests create) but one time in
// eight "absent": a pod that needs an absent one waits, and most pods should get further.
func objectName(r *rand.Rand) string {
	if r.Intn(8) == 0 {
		return "absent"
	}
	return "present"
}

// keyName is the key "k" (which "present" has), or one time in eight "missing".
func keyName(r *rand.Rand) string {
	if r.Intn(8) == 0 {
		return "missing"
	}
	return "k"
}

func optionalBool(r *rand.Rand) *bool {
	switch r.Intn(3) {
	case 0:
		return nil
	case 1:
		return ptr.To(true)
	}
	return ptr.To(false)
}

func mode(r *rand.Rand) *int32 {
	if r.Intn(2) == 0 {
		return nil
	}
	return ptr.To(pick[int32](r, 0o644, 0o400, 0o777, 0o600))
}

func keyItems(r *rand.Rand) []v1.KeyToPath {
	var items []v1.KeyToPath
	for k := range r.Intn(3) {
		items = append(items, v1.KeyToPath{Key: keyName(r), Path: fmt.Sprintf("i%d/%s", k, randLabel(r)), Mode: mode(r)})
	}
	return items
}

func prefixItems(items []v1.KeyToPath, j int) []v1.KeyToPath {
	for k := range items {
		items[k].Path = fmt.Sprintf("s%d/%s", j, items[k].Path)
	}
	return items
}

func downwardItems(r *rand.Rand) []v1.DownwardAPIVolumeFile {
	var items []v1.DownwardAPIVolumeFile
	for k := range 1 + r.Intn(3) {
		it := v1.DownwardAPIVolumeFile{Path: fmt.Sprintf("d%d", k), Mode: mode(r)}
		if r.Intn(3) == 0 {
			it.ResourceFieldRef = &v1.ResourceFieldSelector{ContainerName: "c0", Resource: pick(r, "limits.cpu", "limits.memory", "requests.cpu", "requests.memory")}
			if r.Intn(2) == 0 {
				it.ResourceFieldRef.Divisor = resource.MustParse(pick(r, "1m", "1Mi", "1"))
			}
		} else {
			it.FieldRef = &v1.ObjectFieldSelector{FieldPath: pick(r, "metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid", "metadata.labels['app']")}
		}
		items = append(items, it)
	}
	return items
}

func randomEnv(r *rand.Rand, container string) []v1.EnvVar {
	var env []v1.EnvVar
	for k := range r.Intn(4) {
		e := v1.EnvVar{Name: fmt.Sprintf("E%d_%s", k, strings.ToUpper(randLabel(r)))}
		switch r.Intn(7) {
		case 0:
			e.ValueFrom = &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: pick(r, "metadata.name", "metadata.namespace", "spec.nodeName", "status.podIP", "status.hostIP", "metadata.labels['app']", "spec.serviceAccountName")}}
		case 1:
			e.ValueFrom = &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: pick(r, "limits.cpu", "limits.memory", "requests.cpu", "limits.ephemeral-storage")}}
		case 2:
			e.ValueFrom = &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: objectName(r)}, Key: keyName(r), Optional: optionalBool(r)}}
		case 3:
			e.ValueFrom = &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: objectName(r)}, Key: keyName(r), Optional: optionalBool(r)}}
		case 4:
			e.Value = "$(E0_X) and $$literal " + randLabel(r)
		default:
			e.Value = randLabel(r)
		}
		env = append(env, e)
	}
	return env
}

// script chooses how the in-memory runtime runs the pod's containers.
func (g *Generator) script(r *rand.Rand, pod *v1.Pod) map[string]string {
	a := map[string]string{}
	for _, c := range pod.Spec.InitContainers {
		// A plain init container must end for the pod to get past it.
		if c.RestartPolicy == nil {
			a["sim.berth.dev/run-seconds."+c.Name] = pick(r, "0", "0.2", "1")
		}
	}
	for _, c := range pod.Spec.Containers {
		switch r.Intn(8) {
		case 0:
			a["sim.berth.dev/run-seconds."+c.Name] = pick(r, "0", "0.5", "2")
			a["sim.berth.dev/exit-code."+c.Name] = pick(r, "0", "1", "2")
		case 1:
			a["sim.berth.dev/fail-start."+c.Name] = "exec: no such file"
		case 2:
			a["sim.berth.dev/oom."+c.Name] = "true"
		}
	}
	if r.Intn(6) == 0 {
		a["sim.berth.dev/exec-exit-code"] = "1"
	}
	if r.Intn(4) == 0 {
		a["sim.berth.dev/stop-exit-code"] = "0"
	}
	return a
}

// randLabel is a short DNS label.
func randLabel(r *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 1+r.Intn(6))
	for i := range b {
		b[i] = letters[r.Intn(len(letters))]
	}
	return string(b)
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.Intn(len(xs))] }

// Settled is a generated pod whose status the node agent has settled: running, done, or
// pending for a reason that stays: a container waiting for one (an image that does not pull,
// a ConfigMap that does not exist, a crash loop), an init container running or restarting
// (a sidecar that exits is restarted, and the init containers after it wait), or a sandbox
// the runtime has refused for SandboxGrace (an invalid sysctl; the events say
// FailedCreatePodSandBox). ContainerCreating and PodInitializing alone are steps on the way.
func Settled(p *v1.Pod, now time.Time) bool {
	return Outcome(p, now) != ""
}

// SandboxGrace is how long a pod may stay without a sandbox before Settled takes it as
// refused by the runtime.
const SandboxGrace = 30 * time.Second

// Outcome names how a settled pod ended up, for a tally: its phase (and reason), and for a
// pending pod why ("Pending/CreateContainerConfigError", "Pending/InitRunning"); "" while it
// has not settled.
func Outcome(p *v1.Pod, now time.Time) string {
	switch p.Status.Phase {
	case v1.PodRunning, v1.PodSucceeded, v1.PodFailed:
		if p.Status.Reason != "" {
			return string(p.Status.Phase) + "/" + p.Status.Reason
		}
		return string(p.Status.Phase)
	case v1.PodPending:
	default:
		return ""
	}
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range list {
			if w := s.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				return "Pending/" + w.Reason
			}
		}
	}
	for _, s := range p.Status.InitContainerStatuses {
		switch {
		case s.State.Running != nil:
			return "Pending/InitRunning"
		case s.RestartCount > 0:
			return "Pending/InitRestarting"
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReadyToStartContainers && c.Status == v1.ConditionFalse && now.Sub(c.LastTransitionTime.Time) > SandboxGrace {
			return "Pending/NoSandbox"
		}
	}
	return ""
}

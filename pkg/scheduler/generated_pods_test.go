package scheduler

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/berth-cluster/berth/pkg/scheduler/config"
	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	frameworkruntime "github.com/berth-cluster/berth/pkg/scheduler/framework/runtime"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins"
	"github.com/berth-cluster/berth/pkg/scheduler/queue"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// The generated-pods test: random nodes and random pods (every optional pointer and slice of
// the pod spec and the node nil or not, at random) go through the default profile's plugins,
// the cache and the queue's hints. Nothing may panic: the framework would recover a plugin's
// panic, so the test also checks that berth_recovered_panics_total did not move and that no
// status speaks of a panic. Seeded: a failure names the seed and the pod to replay.

// Small vocabularies, so that labels, selectors, taints and tolerations sometimes match and
// the plugins' matching paths run, not only their "nothing matches" ones.
var (
	genKeys      = []string{"zone", "region", "app", "tier", v1.LabelHostname, v1.LabelTopologyZone}
	genValues    = []string{"a", "b", "c", "1", "10"}
	genResources = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, v1.ResourcePods, "example.com/gpu", "hugepages-2Mi"}
	genImages    = []string{"busybox", "busybox:1.36", "registry.local/app:v1", "nginx@sha256:abc"}
	genNS        = []string{"default", "kube-system", "team"}
)

func pick[T any](c randfill.Continue, from []T) T { return from[c.Intn(len(from))] }

// genFiller fills objects from seed, with the vocabularies above where values meet.
func genFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 3).MaxDepth(20).Funcs(
		// Free text matters to no plugin: short strings keep the objects small and the test fast.
		func(str *string, c randfill.Continue) { *str = pick(c, genValues) },
		func(q *resource.Quantity, c randfill.Continue) {
			switch c.Intn(4) {
			case 0:
				*q = resource.Quantity{}
			case 1:
				*q = *resource.NewMilliQuantity(c.Int63n(4000), resource.DecimalSI)
			case 2:
				*q = *resource.NewQuantity(c.Int63n(8<<30), resource.BinarySI)
			default:
				*q = *resource.NewQuantity(c.Int63n(10), resource.DecimalSI)
			}
		},
		func(l *v1.ResourceList, c randfill.Continue) {
			if c.Intn(4) == 0 {
				return
			}
			*l = v1.ResourceList{}
			for range c.Intn(4) {
				var q resource.Quantity
				c.Fill(&q)
				(*l)[pick(c, genResources)] = q
			}
		},
		func(m *map[string]string, c randfill.Continue) {
			if c.Intn(4) == 0 {
				return
			}
			*m = map[string]string{}
			for range c.Intn(4) {
				(*m)[pick(c, genKeys)] = pick(c, genValues)
			}
		},
		// Mostly what validation lets through; sometimes not (a bad operator, values where
		// none belong), which must be an error, never a panic.
		func(r *metav1.LabelSelectorRequirement, c randfill.Continue) {
			r.Key = pick(c, genKeys)
			r.Operator = pick(c, []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist})
			n := 0
			if r.Operator == metav1.LabelSelectorOpIn || r.Operator == metav1.LabelSelectorOpNotIn {
				n = c.Intn(2) + 1
			}
			if c.Intn(400) == 0 {
				r.Operator, n = pick(c, []metav1.LabelSelectorOperator{"Bogus", "", metav1.LabelSelectorOpIn, metav1.LabelSelectorOpExists}), c.Intn(2)
			}
			for range n {
				r.Values = append(r.Values, pick(c, genValues))
			}
		},
		func(r *v1.NodeSelectorRequirement, c randfill.Continue) {
			r.Key = pick(c, genKeys)
			r.Operator = pick(c, []v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist, v1.NodeSelectorOpGt, v1.NodeSelectorOpLt})
			switch r.Operator {
			case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
				r.Values = []string{pick(c, genValues), pick(c, []string{"node-1", "node-2", "a"})}
			case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
				r.Values = []string{pick(c, []string{"0", "1", "10"})}
			}
			if c.Intn(20) == 0 { // what validation rejects: an error, never a panic
				r.Key, r.Operator, r.Values = "metadata.name", pick(c, []v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpExists, "Bogus"}), nil
			}
		},
		func(t *v1.PodAffinityTerm, c randfill.Continue) {
			c.Fill(&t.LabelSelector)
			c.Fill(&t.NamespaceSelector)
			t.TopologyKey = pick(c, genKeys)
			t.Namespaces = nil
			for range c.Intn(3) {
				t.Namespaces = append(t.Namespaces, pick(c, genNS))
			}
			t.MatchLabelKeys, t.MismatchLabelKeys = nil, nil
			if c.Intn(3) == 0 {
				t.MatchLabelKeys = []string{pick(c, genKeys)}
			}
		},
		func(w *v1.WeightedPodAffinityTerm, c randfill.Continue) {
			c.Fill(&w.PodAffinityTerm)
			w.Weight = int32(c.Intn(100) + 1)
		},
		func(w *v1.PreferredSchedulingTerm, c randfill.Continue) {
			c.Fill(&w.Preference)
			w.Weight = int32(c.Intn(100) + 1)
		},
		func(tsc *v1.TopologySpreadConstraint, c randfill.Continue) {
			c.Fill(&tsc.LabelSelector)
			tsc.MaxSkew = int32(c.Intn(3) + 1)
			tsc.TopologyKey = pick(c, genKeys)
			tsc.WhenUnsatisfiable = pick(c, []v1.UnsatisfiableConstraintAction{v1.DoNotSchedule, v1.ScheduleAnyway})
			tsc.MinDomains = nil
			if c.Intn(3) == 0 {
				tsc.MinDomains = ptr.To(int32(c.Intn(3) + 1))
			}
			policies := []*v1.NodeInclusionPolicy{nil, ptr.To(v1.NodeInclusionPolicyHonor), ptr.To(v1.NodeInclusionPolicyIgnore)}
			tsc.NodeAffinityPolicy, tsc.NodeTaintsPolicy = pick(c, policies), pick(c, policies)
			tsc.MatchLabelKeys = nil
			if c.Intn(3) == 0 {
				tsc.MatchLabelKeys = []string{pick(c, genKeys)}
			}
		},
		func(ts *[]v1.Taint, c randfill.Continue) {
			*ts = nil
			for range max(0, c.Intn(6)-3) {
				var t v1.Taint
				c.Fill(&t)
				*ts = append(*ts, t)
			}
		},
		func(t *v1.Taint, c randfill.Continue) {
			t.Key, t.Value = pick(c, append([]string{v1.TaintNodeUnschedulable, v1.TaintNodeNotReady}, genKeys...)), pick(c, genValues)
			t.Effect = pick(c, []v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute})
			if c.Intn(2) == 0 {
				t.TimeAdded = &metav1.Time{}
			}
		},
		func(t *v1.Toleration, c randfill.Continue) {
			t.Key = pick(c, append([]string{"", v1.TaintNodeUnschedulable}, genKeys...))
			t.Operator = pick(c, []v1.TolerationOperator{"", v1.TolerationOpExists, v1.TolerationOpEqual})
			t.Value = pick(c, append([]string{""}, genValues...))
			t.Effect = pick(c, []v1.TaintEffect{"", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute})
			if c.Intn(2) == 0 {
				t.TolerationSeconds = ptr.To(int64(c.Intn(300)))
			}
		},
		func(p *v1.ContainerPort, c randfill.Continue) {
			p.ContainerPort = int32(c.Intn(3) + 80)
			if c.Intn(2) == 0 {
				p.HostPort = int32(c.Intn(3) + 8080)
			}
			p.Protocol = pick(c, []v1.Protocol{"", v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP})
			p.HostIP = pick(c, []string{"", "0.0.0.0", "127.0.0.1", "::"})
		},
		func(img *v1.ContainerImage, c randfill.Continue) {
			for range c.Intn(3) {
				img.Names = append(img.Names, pick(c, genImages))
			}
			img.SizeBytes = c.Int63n(2 << 30)
		},
		// Of a container, the scheduler reads its image, ports, resources and restart policy.
		func(ctr *v1.Container, c randfill.Continue) {
			ctr.Name = c.String(5)
			ctr.Image = pick(c, append([]string{""}, genImages...))
			c.Fill(&ctr.Ports)
			c.Fill(&ctr.Resources)
			ctr.RestartPolicy = pick(c, []*v1.ContainerRestartPolicy{nil, ptr.To(v1.ContainerRestartPolicyAlways), ptr.To(v1.ContainerRestartPolicy("Never"))})
		},
		func(r *v1.ResourceRequirements, c randfill.Continue) {
			c.Fill(&r.Limits)
			c.Fill(&r.Requests)
			r.Claims = nil
		},
		func(p *v1.PreemptionPolicy, c randfill.Continue) {
			*p = pick(c, []v1.PreemptionPolicy{v1.PreemptLowerPriority, v1.PreemptNever, ""})
		},
		func(p *v1.PodPhase, c randfill.Continue) {
			*p = pick(c, []v1.PodPhase{"", v1.PodPending, v1.PodRunning})
		},
		func(g *v1.PodSchedulingGate, c randfill.Continue) {
			g.Name = pick(c, []string{"example.com/wait", "", "b"})
		},
		// Volumes are large and only their presence matters to the default plugins.
		func(vs *[]v1.Volume, c randfill.Continue) {
			*vs = nil
			for i := range c.Intn(3) {
				vol := v1.Volume{Name: fmt.Sprintf("v%d", i)}
				switch c.Intn(3) {
				case 0:
					vol.EmptyDir = &v1.EmptyDirVolumeSource{}
				case 1:
					vol.PersistentVolumeClaim = &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}
				}
				*vs = append(*vs, vol)
			}
		},
	)
}

// genNode is a random node named name.
func genNode(f *randfill.Filler, name string) *v1.Node {
	n := &v1.Node{}
	f.Fill(n)
	n.Name, n.UID, n.ResourceVersion = name, types.UID("uid-"+name), "1"
	n.DeletionTimestamp, n.ManagedFields, n.OwnerReferences = nil, nil, nil
	if n.Labels != nil {
		n.Labels[v1.LabelHostname] = name
	}
	// Mostly room for the pods, and sometimes no allocatable at all.
	if n.UID[len(n.UID)-1]%5 != 1 {
		n.Status.Allocatable = v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("110"),
			v1.ResourceEphemeralStorage: resource.MustParse("1Ti"), "example.com/gpu": resource.MustParse("8"), "hugepages-2Mi": resource.MustParse("1Gi"),
		}
	}
	// Mostly schedulable nodes, so that many pods get past Filter to Score and Reserve.
	n.Spec.Unschedulable = n.UID[len(n.UID)-1]%5 == 0 && len(n.Spec.Taints) > 0
	return n
}

// genPod is a random pod, bound to node when node is not empty, pending otherwise.
func genPod(f *randfill.Filler, name, node string, r *rand.Rand) *v1.Pod {
	p := &v1.Pod{}
	f.Fill(p)
	p.Name, p.Namespace, p.UID, p.ResourceVersion = name, genNS[r.Intn(len(genNS))], types.UID("uid-"+name), "1"
	p.DeletionTimestamp, p.ManagedFields = nil, nil
	p.Spec.NodeName = node
	p.Spec.SchedulerName = v1.DefaultSchedulerName
	p.Spec.NodeSelector = nil
	if r.Intn(4) == 0 {
		p.Spec.NodeSelector = map[string]string{genKeys[r.Intn(len(genKeys))]: genValues[r.Intn(len(genValues))]}
	}
	if node == "" {
		p.Status.NominatedNodeName = ""
		if r.Intn(10) == 0 {
			p.Status.NominatedNodeName = fmt.Sprintf("node-%d", r.Intn(5))
		}
	}
	return p
}

func TestGeneratedPodsNeverPanicTheScheduler(t *testing.T) {
	const (
		seeds       = 5
		nodesPerRun = 12
		boundPods   = 30
		pendingPods = 400
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = klog.NewContext(ctx, klog.LoggerWithName(klog.Background(), "generated"))
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(framework.PanicComponent))
	tried := 0
	outcomes := map[string]int{}
	for seed := int64(1); seed <= seeds; seed++ {
		f := genFiller(seed)
		r := rand.New(rand.NewSource(seed))
		s, fwk := newGeneratedScheduler(t, ctx)
		hints := hintFunctions(t, ctx, fwk.EnqueueExtensions())
		pool := newObjectPool(f, r, nodesPerRun)
		logger := klog.FromContext(ctx)

		var nodes []*v1.Node
		for i := range nodesPerRun {
			n := genNode(f, fmt.Sprintf("node-%d", i))
			nodes = append(nodes, n)
			s.addNode(n)
		}
		for i := range boundPods {
			p := genPod(f, fmt.Sprintf("bound-%d-%d", seed, i), nodes[r.Intn(len(nodes))].Name, r)
			s.addPodToCache(p)
		}
		// Pods of a node the cache does not know (yet, or any more): a NodeInfo without a
		// node, which the snapshot must leave out.
		s.addPodToCache(genPod(f, fmt.Sprintf("ghost-%d", seed), "ghost-node", r))
		gone := genNode(f, "gone-node")
		s.addNode(gone)
		s.addPodToCache(genPod(f, fmt.Sprintf("on-gone-%d", seed), gone.Name, r))
		s.deleteNode(gone)
		// Nodes change under the bound pods: the cache and the event names must cope.
		for i := range 3 {
			old := nodes[i]
			n := genNode(f, old.Name)
			n.ResourceVersion = "2"
			s.updateNode(old, n)
			nodes[i] = n
		}

		for i := range pendingPods {
			tried++
			pod := genPod(f, fmt.Sprintf("pending-%d-%d", seed, i), "", r)
			where := fmt.Sprintf("seed %d, pod %d (%s)", seed, i, pod.Name)
			for _, pl := range fwk.PreEnqueuePlugins() {
				pl.PreEnqueue(ctx, pod)
			}
			// Every hint, with random objects of its resource.
			for _, h := range hints {
				oldObj, newObj := pool.hintObjects(h.event)
				if _, err := h.fn(logger, pod, oldObj, newObj); err != nil {
					logger.V(5).Info("Hint error", "err", err)
				}
			}
			podInfo := &framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(pod)}
			// Some pods are nominated (as preemption does) to a node: the pods after them
			// filter that node with the nominated pods on it.
			if i%7 == 0 {
				s.Queue.AddNominatedPod(podInfo.PodInfo, &framework.NominatingInfo{NominatingMode: framework.ModeOverride, NominatedNodeName: nodes[r.Intn(len(nodes))].Name})
			}
			state := framework.NewCycleState()
			result, _, status := s.schedulingCycle(ctx, state, fwk, podInfo, s.clock.Now())
			if strings.Contains(status.Message(), "panic") {
				t.Fatalf("%s: %v", where, status)
			}
			outcomes[status.Code().String()]++
			// Score every node, feasible or not, so that the Score plugins see all kinds of
			// nodes, not only the few a random pod fits.
			scoreState := framework.NewCycleState()
			if _, st, _ := fwk.RunPreFilterPlugins(ctx, scoreState, pod); st.IsSuccess() {
				all, _ := s.snapshot.NodeInfos().List()
				if st := fwk.RunPreScorePlugins(ctx, scoreState, pod, all); st.IsSuccess() {
					_, st = fwk.RunScorePlugins(ctx, scoreState, pod, all)
					outcomes["scored on all nodes: "+st.Code().String()]++
				}
			}
			if status.IsSuccess() {
				// Bind is the API's; PreBind, the rest of the binding cycle, runs here.
				if st := fwk.RunPreBindPlugins(ctx, state, pod, result.SuggestedHost); strings.Contains(st.Message(), "panic") {
					t.Fatalf("%s: PreBind: %v", where, st)
				}
				fwk.RunPostBindPlugins(ctx, state, pod, result.SuggestedHost)
			}
			// Bound and pending pods change: the event names and the cache must cope.
			newPod := genPod(f, pod.Name, pod.Spec.NodeName, r)
			newPod.UID, newPod.ResourceVersion = pod.UID, "2"
			podUpdateActions(pod, newPod)
			// The informers' handlers: the pending pod updated and deleted, a bound pod
			// updated and deleted, each moving pods in the queue through the hints.
			s.addPodToQueue(pod)
			s.updatePodInQueue(pod, newPod)
			s.deletePodFromQueue(newPod)
			bound := genPod(f, fmt.Sprintf("bound-later-%d-%d", seed, i), nodes[r.Intn(len(nodes))].Name, r)
			s.addPodToCache(bound)
			boundNew := genPod(f, bound.Name, bound.Spec.NodeName, r)
			boundNew.UID, boundNew.ResourceVersion = bound.UID, "2"
			s.updatePodInCache(bound, boundNew)
			if i%3 == 0 {
				s.deletePodFromCache(boundNew)
			}
			if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(framework.PanicComponent)); got != before {
				t.Fatalf("%s: berth_recovered_panics_total{component=scheduler} moved from %v to %v: a panic was recovered (its stack is in the log)", where, before, got)
			}
		}
	}
	t.Logf("%d pods: %v", tried, outcomes)
	// The generators must keep the plugins' deeper paths busy: pods that fit and are
	// assumed, bound, scored.
	if tried != seeds*pendingPods || outcomes["Success"] < tried/20 || outcomes["scored on all nodes: Success"] < tried/2 {
		t.Fatalf("the generated pods reached too little: %d pods, %v", tried, outcomes)
	}
}

// newGeneratedScheduler is a scheduler of the default profile over a fake client.
func newGeneratedScheduler(t *testing.T, ctx context.Context) (*Scheduler, *frameworkruntime.Framework) {
	t.Helper()
	cfg, err := config.Complete(&configv1.KubeSchedulerConfiguration{})
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	t.Cleanup(broadcaster.Shutdown)
	s, err := New(ctx, Options{Config: cfg, Client: client, InformerFactory: factory, Broadcaster: broadcaster, Registry: plugins.NewInTreeRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return s, s.Profiles[v1.DefaultSchedulerName]
}

type hint struct {
	event framework.ClusterEvent
	fn    framework.QueueingHintFn
}

// hintFunctions are the profile's QueueingHints, by the resource of their event.
func hintFunctions(t *testing.T, ctx context.Context, exts []framework.EnqueueExtensions) []hint {
	t.Helper()
	var ps []framework.Plugin
	for _, e := range exts {
		ps = append(ps, e)
	}
	m, err := queue.BuildQueueingHintMap(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	var out []hint
	for ev, fns := range m {
		for _, fn := range fns {
			if fn.QueueingHintFn != nil {
				out = append(out, hint{event: ev, fn: fn.QueueingHintFn})
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the default profile registered no QueueingHint")
	}
	return out
}

// objectPool holds random nodes and pods for the hints' events: generating them for every
// hint call would cost more than all the scheduling.
type objectPool struct {
	r       *rand.Rand
	nodes   []*v1.Node
	bound   []*v1.Pod
	unbound []*v1.Pod
}

func newObjectPool(f *randfill.Filler, r *rand.Rand, nodes int) *objectPool {
	p := &objectPool{r: r}
	for i := range 40 {
		p.nodes = append(p.nodes, genNode(f, fmt.Sprintf("node-%d", i%nodes)))
		p.bound = append(p.bound, genPod(f, fmt.Sprintf("other-%d", i), fmt.Sprintf("node-%d", i%nodes), r))
		p.unbound = append(p.unbound, genPod(f, fmt.Sprintf("other-%d", i), "", r))
	}
	return p
}

// hintObjects are the old and new objects of one of ev's actions, shaped as the event
// handlers pass them: (nil, new) for an add, (old, nil) for a delete, (old, new) for an
// update; nodes for node events, pods otherwise.
func (p *objectPool) hintObjects(ev framework.ClusterEvent) (oldObj, newObj interface{}) {
	r := p.r
	gen := func() interface{} {
		switch ev.Resource {
		case framework.Node:
			return p.nodes[r.Intn(len(p.nodes))]
		case framework.AssignedPod:
			return p.bound[r.Intn(len(p.bound))]
		}
		return p.unbound[r.Intn(len(p.unbound))]
	}
	var shapes []string
	if ev.ActionType&framework.Add != 0 {
		shapes = append(shapes, "add")
	}
	if ev.ActionType&framework.Delete != 0 {
		shapes = append(shapes, "delete")
	}
	if ev.ActionType&^(framework.Add|framework.Delete) != 0 {
		shapes = append(shapes, "update")
	}
	switch shapes[r.Intn(len(shapes))] {
	case "add":
		return nil, gen()
	case "delete":
		return gen(), nil
	}
	return gen(), gen()
}

package admission

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/node/types"
)

// podBuilder builds test pods: makePod("a").req("cpu", "1").obj().
type podBuilder struct{ pod *v1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: ktypes.UID("uid-" + name)},
		Spec: v1.PodSpec{
			NodeName:   "node-1",
			Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}}}},
		},
	}}
}

func (b *podBuilder) req(name v1.ResourceName, q string) *podBuilder {
	b.pod.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q)
	return b
}
func (b *podBuilder) nodeName(n string) *podBuilder { b.pod.Spec.NodeName = n; return b }
func (b *podBuilder) hostPort(p int32) *podBuilder {
	b.pod.Spec.Containers[0].Ports = append(b.pod.Spec.Containers[0].Ports,
		v1.ContainerPort{ContainerPort: p, HostPort: p, Protocol: v1.ProtocolTCP})
	return b
}
func (b *podBuilder) selector(k, v string) *podBuilder {
	if b.pod.Spec.NodeSelector == nil {
		b.pod.Spec.NodeSelector = map[string]string{}
	}
	b.pod.Spec.NodeSelector[k] = v
	return b
}
func (b *podBuilder) label(k, v string) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}
func (b *podBuilder) affinityNotIn(k, v string) *podBuilder {
	b.pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: k, Operator: v1.NodeSelectorOpNotIn, Values: []string{v}}},
		}}},
	}}
	return b
}
func (b *podBuilder) tolerate(key string, effect v1.TaintEffect) *podBuilder {
	b.pod.Spec.Tolerations = append(b.pod.Spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: effect})
	return b
}
func (b *podBuilder) static() *podBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[types.ConfigSourceAnnotationKey] = types.FileSource
	return b
}
func (b *podBuilder) priority(p int32) *podBuilder { b.pod.Spec.Priority = ptr.To(p); return b }
func (b *podBuilder) os(name v1.OSName) *podBuilder {
	b.pod.Spec.OS = &v1.PodOS{Name: name}
	return b
}
func (b *podBuilder) strictGroups() *podBuilder {
	b.pod.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr.To(v1.SupplementalGroupsPolicyStrict)}
	return b
}
func (b *podBuilder) obj() *v1.Pod { return b.pod }

// testNode: 4 cpus, 4Gi, 10Gi of ephemeral storage, 3 pods, 2 example.com/gpu; labelled
// zone=a; tainted as told.
func testNode(taints ...v1.Taint) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "a"}},
		Spec:       v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:              resource.MustParse("4"),
			v1.ResourceMemory:           resource.MustParse("4Gi"),
			v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
			v1.ResourcePods:             resource.MustParse("3"),
			"example.com/gpu":           resource.MustParse("2"),
		}},
	}
}

func TestAdmit(t *testing.T) {
	noExecute := v1.Taint{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoExecute}
	noSchedule := v1.Taint{Key: "soft", Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name        string
		node        *v1.Node
		pod         *v1.Pod
		others      []*v1.Pod
		wantReason  string
		wantMessage string
	}{
		{name: "fits", pod: makePod("p").req("cpu", "1").req("memory", "1Gi").obj(),
			others: []*v1.Pod{makePod("o").req("cpu", "2").obj()}},
		{name: "requests nothing", pod: makePod("p").obj()},
		{name: "too much cpu", pod: makePod("p").req("cpu", "8").obj(),
			others:     []*v1.Pod{makePod("o").req("cpu", "100m").obj()},
			wantReason: "OutOfcpu", wantMessage: "Node didn't have enough resource: cpu, requested: 8000, used: 100, capacity: 4000"},
		{name: "cpu taken by others", pod: makePod("p").req("cpu", "2").obj(),
			others:     []*v1.Pod{makePod("o").req("cpu", "3").obj()},
			wantReason: "OutOfcpu", wantMessage: "Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000"},
		{name: "too much memory", pod: makePod("p").req("memory", "5Gi").obj(),
			wantReason: "OutOfmemory", wantMessage: "Node didn't have enough resource: memory, requested: 5368709120, used: 0, capacity: 4294967296"},
		{name: "too much ephemeral storage", pod: makePod("p").req("ephemeral-storage", "11Gi").obj(),
			wantReason: "OutOfephemeral-storage", wantMessage: "Node didn't have enough resource: ephemeral-storage, requested: 11811160064, used: 0, capacity: 10737418240"},
		{name: "too many pods", pod: makePod("p").obj(),
			others:     []*v1.Pod{makePod("a").obj(), makePod("b").obj(), makePod("c").obj()},
			wantReason: "OutOfpods", wantMessage: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "pods come before cpu", pod: makePod("p").req("cpu", "8").obj(),
			others:     []*v1.Pod{makePod("a").obj(), makePod("b").obj(), makePod("c").obj()},
			wantReason: "OutOfpods", wantMessage: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "too many gpus", pod: makePod("p").req("example.com/gpu", "3").obj(),
			wantReason: "OutOfexample.com/gpu", wantMessage: "Node didn't have enough resource: example.com/gpu, requested: 3, used: 0, capacity: 2"},
		{name: "an extended resource the node does not have is ignored", pod: makePod("p").req("example.com/fpga", "1").obj()},
		{name: "node selector", pod: makePod("p").selector("zone", "b").obj(),
			wantReason: "NodeAffinity", wantMessage: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "node selector matches", pod: makePod("p").selector("zone", "a").obj()},
		{name: "required node affinity", pod: makePod("p").affinityNotIn("zone", "a").obj(),
			wantReason: "NodeAffinity", wantMessage: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "resources come before affinity", pod: makePod("p").req("cpu", "5").selector("zone", "b").obj(),
			wantReason: "OutOfcpu", wantMessage: "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000"},
		{name: "another node's pod", pod: makePod("p").nodeName("node-2").obj(),
			wantReason: "NodeName", wantMessage: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{name: "host port taken", pod: makePod("p").hostPort(8080).obj(),
			others:     []*v1.Pod{makePod("o").hostPort(8080).obj()},
			wantReason: "NodePorts", wantMessage: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"},
		{name: "another host port", pod: makePod("p").hostPort(8081).obj(),
			others: []*v1.Pod{makePod("o").hostPort(8080).obj()}},
		{name: "untolerated NoExecute taint", node: testNode(noExecute), pod: makePod("p").obj(),
			wantReason: "TaintToleration", wantMessage: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"},
		{name: "tolerated NoExecute taint", node: testNode(noExecute), pod: makePod("p").tolerate("dedicated", v1.TaintEffectNoExecute).obj()},
		{name: "NoSchedule taints are the scheduler's business", node: testNode(noSchedule), pod: makePod("p").obj()},
		{name: "static pods ignore taints", node: testNode(noExecute), pod: makePod("p").static().obj()},
		{name: "node name comes before ports and taints", node: testNode(noExecute), pod: makePod("p").nodeName("x").hostPort(1).obj(),
			others:     []*v1.Pod{makePod("o").hostPort(1).obj()},
			wantReason: "NodeName", wantMessage: "Predicate NodeName failed: node(s) didn't match the requested node name"},
		{name: "static pods are not short of resources", pod: makePod("p").static().req("cpu", "8").obj()},
		{name: "nor are system-critical pods", pod: makePod("p").priority(2000000000).req("memory", "8Gi").obj()},
		{name: "but lower priorities are", pod: makePod("p").priority(1999999999).req("memory", "8Gi").obj(),
			wantReason: "OutOfmemory", wantMessage: "Node didn't have enough resource: memory, requested: 8589934592, used: 0, capacity: 4294967296"},
		{name: "critical pods fail other predicates", pod: makePod("p").static().req("cpu", "8").selector("zone", "b").obj(),
			wantReason: "NodeAffinity", wantMessage: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"},
		{name: "os label", pod: makePod("p").label("kubernetes.io/os", "windows").obj(),
			wantReason: "PodOSSelectorNodeLabelDoesNotMatch", wantMessage: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		{name: "os label matches", pod: makePod("p").label("kubernetes.io/os", "linux").obj()},
		{name: "os field", pod: makePod("p").os(v1.Windows).obj(),
			wantReason: "PodOSNotSupported", wantMessage: "Failed to admit pod as the OS field doesn't match node OS"},
		{name: "strict supplemental groups", pod: makePod("p").strictGroups().obj(),
			wantReason: "SupplementalGroupsPolicyNotSupported", wantMessage: "SupplementalGroupsPolicy=Strict is not supported in this node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := tt.node
			if node == nil {
				node = testNode()
			}
			h := NewPredicateAdmitHandler(func() (*v1.Node, error) { return node, nil })
			got := h.Admit(&PodAdmitAttributes{Pod: tt.pod, OtherPods: tt.others})
			want := PodAdmitResult{Admit: tt.wantReason == "", Reason: tt.wantReason, Message: tt.wantMessage}
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestAdmitStrictSupplementalGroupsOnSupportingNode(t *testing.T) {
	node := testNode()
	node.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: ptr.To(true)}
	h := NewPredicateAdmitHandler(func() (*v1.Node, error) { return node, nil })
	if got := h.Admit(&PodAdmitAttributes{Pod: makePod("p").strictGroups().obj()}); !got.Admit {
		t.Errorf("got %+v, want admitted", got)
	}
}

func TestAdmitWithoutNode(t *testing.T) {
	h := NewPredicateAdmitHandler(func() (*v1.Node, error) { return nil, errors.New("not yet") })
	got := h.Admit(&PodAdmitAttributes{Pod: makePod("p").obj()})
	want := PodAdmitResult{Reason: "InvalidNodeInfo", Message: "Kubelet cannot get node info."}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestAdmitCriticalPodWithPreemption(t *testing.T) {
	node := testNode()
	others := []*v1.Pod{makePod("o").req("cpu", "3").obj()}
	var lacking []InsufficientResource
	preemptErr := error(nil)
	h := NewPredicateAdmitHandlerWithPreemption(func() (*v1.Node, error) { return node, nil },
		func(pod *v1.Pod, l []InsufficientResource) error { lacking = l; return preemptErr })

	pod := makePod("p").static().req("cpu", "2").req("memory", "1Gi").obj()
	if got := h.Admit(&PodAdmitAttributes{Pod: pod, OtherPods: others}); !got.Admit {
		t.Fatalf("got %+v, want admitted after preemption", got)
	}
	if len(lacking) != 1 || lacking[0].ResourceName != v1.ResourceCPU || lacking[0].Shortfall() != 1000 {
		t.Errorf("preempt asked for %+v, want 1000m of cpu", lacking)
	}

	preemptErr = errors.New("nothing to evict")
	got := h.Admit(&PodAdmitAttributes{Pod: pod, OtherPods: others})
	want := PodAdmitResult{Reason: "UnexpectedAdmissionError",
		Message: "Unexpected error while attempting to recover from admission failure: nothing to evict"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}

	// A pod that is not critical is never preempted for.
	lacking = nil
	if got := h.Admit(&PodAdmitAttributes{Pod: makePod("q").req("cpu", "2").obj(), OtherPods: others}); got.Reason != "OutOfcpu" || lacking != nil {
		t.Errorf("got %+v (preempt asked for %v), want OutOfcpu without preemption", got, lacking)
	}
}

func TestWithoutMissingExtendedResourcesCopies(t *testing.T) {
	pod := makePod("p").req("example.com/fpga", "1").req("cpu", "1").obj()
	h := NewPredicateAdmitHandler(func() (*v1.Node, error) { return testNode(), nil })
	if got := h.Admit(&PodAdmitAttributes{Pod: pod}); !got.Admit {
		t.Fatalf("got %+v", got)
	}
	if _, ok := pod.Spec.Containers[0].Resources.Requests["example.com/fpga"]; !ok {
		t.Error("admission changed the pod")
	}
}

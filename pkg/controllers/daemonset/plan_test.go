package daemonset

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/history"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newDS(name string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, UID: "ds-uid", Generation: 1},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0))}},
			RevisionHistoryLimit: ptr.To[int32](10),
		},
	}
}

func node(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

func taint(key string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Effect: effect}
}

func TestEligibility(t *testing.T) {
	affinity := func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
		}}}
	}
	tests := []struct {
		name              string
		ds                func(*appsv1.DaemonSet)
		node              *corev1.Node
		wantRun, wantKeep bool
	}{
		{name: "plain node", node: node("n", nil), wantRun: true, wantKeep: true},
		{name: "node selector matches", ds: func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"gpu": "yes"} },
			node: node("n", map[string]string{"gpu": "yes"}), wantRun: true, wantKeep: true},
		{name: "node selector does not match", ds: func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"gpu": "yes"} },
			node: node("n", nil)},
		{name: "affinity matches", ds: affinity, node: node("n", map[string]string{"zone": "a"}), wantRun: true, wantKeep: true},
		{name: "affinity does not match", ds: affinity, node: node("n", map[string]string{"zone": "b"})},
		{name: "nodeName elsewhere", ds: func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "other" }, node: node("n", nil)},
		{name: "untolerated NoSchedule: no new pod, an old one stays", node: node("n", nil, taint("dedicated", corev1.TaintEffectNoSchedule)), wantKeep: true},
		{name: "untolerated NoExecute: evicted", node: node("n", nil, taint("dedicated", corev1.TaintEffectNoExecute))},
		{name: "PreferNoSchedule does not matter", node: node("n", nil, taint("dedicated", corev1.TaintEffectPreferNoSchedule)), wantRun: true, wantKeep: true},
		{name: "tolerated taint", ds: func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}, node: node("n", nil, taint("dedicated", corev1.TaintEffectNoExecute)), wantRun: true, wantKeep: true},
		{name: "not-ready tolerated by every daemon", node: node("n", nil, taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)), wantRun: true, wantKeep: true},
		{name: "unschedulable tolerated by every daemon", node: node("n", nil, taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)), wantRun: true, wantKeep: true},
		{name: "network-unavailable needs host networking", node: node("n", nil, taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), wantKeep: true},
		{name: "network-unavailable with host networking", ds: func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true },
			node: node("n", nil, taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), wantRun: true, wantKeep: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDS("d")
			if tt.ds != nil {
				tt.ds(ds)
			}
			run, keep := newEligibility(ds).shouldRun(tt.node)
			if run != tt.wantRun || keep != tt.wantKeep {
				t.Errorf("shouldRun = %v, %v; want %v, %v", run, keep, tt.wantRun, tt.wantKeep)
			}
		})
	}
}

func TestPodTemplateAffinityAndTolerations(t *testing.T) {
	ds := newDS("d")
	ds.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "3"}
	ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}}
	ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
	}}}
	tpl := podTemplate(ds, "abc")
	if tpl.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "abc" || tpl.Labels[TemplateGenerationLabel] != "3" {
		t.Errorf("labels %v", tpl.Labels)
	}
	var keys []string
	for _, tol := range tpl.Spec.Tolerations {
		keys = append(keys, tol.Key+":"+string(tol.Effect))
		if tol.Key == corev1.TaintNodeNotReady && tol.TolerationSeconds != nil {
			t.Error("the not-ready toleration keeps its tolerationSeconds; upstream replaces it with the daemon one")
		}
	}
	want := []string{
		"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/unreachable:NoExecute",
		"node.kubernetes.io/disk-pressure:NoSchedule", "node.kubernetes.io/memory-pressure:NoSchedule",
		"node.kubernetes.io/pid-pressure:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule",
	}
	if !slices.Equal(keys, want) {
		t.Errorf("tolerations %v, want %v", keys, want)
	}
	if ds.Spec.Template.Spec.Tolerations[0].TolerationSeconds == nil {
		t.Error("the DaemonSet's own template was changed")
	}

	a := withNodeAffinity(tpl.Spec.Affinity, "node-1")
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 || len(terms[0].MatchFields) != 1 ||
		terms[0].MatchFields[0].Key != "metadata.name" || terms[0].MatchFields[0].Values[0] != "node-1" {
		t.Errorf("affinity %+v", terms)
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: withNodeAffinity(nil, "node-2")}}
	if n, err := targetNode(pod); err != nil || n != "node-2" {
		t.Errorf("targetNode = %q, %v", n, err)
	}
	pod.Spec.NodeName = "node-3"
	if n, _ := targetNode(pod); n != "node-3" {
		t.Errorf("a bound pod's target is its node: %q", n)
	}
	if _, err := targetNode(&corev1.Pod{}); err == nil {
		t.Error("a pod without affinity has no target")
	}
}

func TestComputeHash(t *testing.T) {
	ds := newDS("d")
	a := history.ComputeHash(&ds.Spec.Template, nil)
	if a != history.ComputeHash(&ds.Spec.Template, nil) || a == history.ComputeHash(&ds.Spec.Template, ptr.To[int32](1)) {
		t.Error("the hash is not a function of the template and the collision count")
	}
	ds.Spec.Template.Spec.Containers[0].Image = "img:2"
	if a == history.ComputeHash(&ds.Spec.Template, nil) {
		t.Error("a new template hashes the same")
	}
}

// dsPod is ds's pod on node at hash; ready an hour ago unless notReady.
func dsPod(name, node, hash string, ready bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": "d", appsv1.DefaultDaemonSetUniqueLabelKey: hash}, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	}
	return p
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func threeNodes() []*corev1.Node {
	return []*corev1.Node{node("n1", nil), node("n2", nil), node("n3", nil)}
}

func TestPlanManage(t *testing.T) {
	ds := newDS("d")
	nodes := append(threeNodes(), node("tainted", nil, taint("x", corev1.TaintEffectNoExecute)))
	dup := dsPod("dup", "n2", "new", true)
	dup.CreationTimestamp = metav1.NewTime(now)
	failed := dsPod("failed", "n3", "new", false)
	failed.Status.Phase = corev1.PodFailed
	unbound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "kube-system"}, Spec: corev1.PodSpec{Affinity: withNodeAffinity(nil, "deleted-node")}}
	pods := []*corev1.Pod{dsPod("a", "n2", "new", true), dup, failed, dsPod("evict", "tainted", "new", true), unbound}
	m := planManage(newView(ds, nodes, pods, "new", now))
	if !slices.Equal(m.create, []string{"n1"}) {
		t.Errorf("create %v, want n1", m.create)
	}
	if got := names(m.delete); !slices.Equal(got, []string{"dup", "evict", "gone"}) {
		t.Errorf("delete %v, want the newer duplicate, the pod on the NoExecute node, the unbound pod for a gone node", got)
	}
	if got := names(m.failed); !slices.Equal(got, []string{"failed"}) {
		t.Errorf("failed %v", got)
	}
	if m.empty() {
		t.Error("a plan with work is empty")
	}
}

func TestPlanRolling(t *testing.T) {
	surge := func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
		ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	}
	tests := []struct {
		name       string
		ds         func(*appsv1.DaemonSet)
		pods       []*corev1.Pod
		wantDelete []string
		wantCreate []string
	}{
		{name: "maxUnavailable 1: one old pod at a time",
			pods:       []*corev1.Pod{dsPod("p1", "n1", "old", true), dsPod("p2", "n2", "old", true), dsPod("p3", "n3", "old", true)},
			wantDelete: []string{"p1"}},
		{name: "waits while a node is unavailable",
			pods:       []*corev1.Pod{dsPod("p1", "n1", "new", false), dsPod("p2", "n2", "old", true), dsPod("p3", "n3", "old", true)},
			wantDelete: nil},
		{name: "unavailable old pods go regardless",
			pods:       []*corev1.Pod{dsPod("p1", "n1", "old", false), dsPod("p2", "n2", "old", false), dsPod("p3", "n3", "old", true)},
			wantDelete: []string{"p1", "p2"}},
		{name: "maxUnavailable 2",
			ds: func(ds *appsv1.DaemonSet) {
				ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
			},
			pods:       []*corev1.Pod{dsPod("p1", "n1", "old", true), dsPod("p2", "n2", "old", true), dsPod("p3", "n3", "new", true)},
			wantDelete: []string{"p1", "p2"}},
		{name: "updated everywhere: nothing",
			pods: []*corev1.Pod{dsPod("p1", "n1", "new", true), dsPod("p2", "n2", "new", true), dsPod("p3", "n3", "new", true)}},
		{name: "surge: a new pod beside an old one", ds: surge,
			pods:       []*corev1.Pod{dsPod("p1", "n1", "old", true), dsPod("p2", "n2", "old", true), dsPod("p3", "n3", "old", true)},
			wantCreate: []string{"n1"}},
		{name: "surge: the old pod goes once the new one is available", ds: surge,
			pods:       []*corev1.Pod{dsPod("p1", "n1", "old", true), dsPod("q1", "n1", "new", true), dsPod("p2", "n2", "old", true), dsPod("p3", "n3", "old", true)},
			wantDelete: []string{"p1"}, wantCreate: []string{"n2"}},
		{name: "surge: an unready new pod holds the budget", ds: surge,
			pods: []*corev1.Pod{dsPod("p1", "n1", "old", true), dsPod("q1", "n1", "new", false), dsPod("p2", "n2", "old", true), dsPod("p3", "n3", "old", true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDS("d")
			if tt.ds != nil {
				tt.ds(ds)
			}
			r, err := planRolling(newView(ds, threeNodes(), tt.pods, "new", now))
			if err != nil {
				t.Fatal(err)
			}
			if got := names(r.delete); !slices.Equal(got, tt.wantDelete) {
				t.Errorf("delete %v, want %v", got, tt.wantDelete)
			}
			if !slices.Equal(r.create, tt.wantCreate) {
				t.Errorf("create %v, want %v", r.create, tt.wantCreate)
			}
		})
	}
}

func TestPlanStatus(t *testing.T) {
	ds := newDS("d")
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "worker"}
	nodes := []*corev1.Node{node("n1", map[string]string{"role": "worker"}), node("n2", map[string]string{"role": "worker"}),
		node("n3", map[string]string{"role": "worker"}), node("other", nil)}
	pods := []*corev1.Pod{dsPod("p1", "n1", "new", true), dsPod("p2", "n2", "old", false), dsPod("p4", "other", "new", true)}
	s := planStatus(newView(ds, nodes, pods, "new", now), 1, nil)
	want := appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, CurrentNumberScheduled: 2, NumberMisscheduled: 1,
		NumberReady: 1, UpdatedNumberScheduled: 1, NumberAvailable: 1, NumberUnavailable: 2}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("status\n got %+v\nwant %+v", s, want)
	}
}

func TestRevisionsToClean(t *testing.T) {
	ds := newDS("d")
	ds.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	var old []*appsv1.ControllerRevision
	for i := 3; i >= 1; i-- {
		old = append(old, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("d-%d", i),
			Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: fmt.Sprint(i)}}, Revision: int64(i)})
	}
	got := revisionsToClean(ds, []*corev1.Pod{dsPod("p", "n1", "1", true)}, old)
	if len(got) != 2 || got[0].Name != "d-2" || got[1].Name != "d-3" {
		t.Errorf("clean %v, want d-2 and d-3 (d-1 runs a pod)", got)
	}
}

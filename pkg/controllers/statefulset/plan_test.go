package statefulset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// setBuilder builds StatefulSets for tests.
type setBuilder struct{ s *appsv1.StatefulSet }

func newSet(name string, replicas int32) setBuilder {
	return setBuilder{&appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: "uid-" + "set", Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			ServiceName: name,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
			},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
			RevisionHistoryLimit: ptr.To[int32](10),
		},
	}}
}

func (b setBuilder) parallel() setBuilder {
	b.s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	return b
}
func (b setBuilder) partition(p int32) setBuilder {
	b.s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(p)
	return b
}
func (b setBuilder) maxUnavailable(n int) setBuilder {
	b.s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(int32(n)))
	return b
}
func (b setBuilder) onDelete() setBuilder {
	b.s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	return b
}
func (b setBuilder) start(n int32) setBuilder {
	b.s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: n}
	return b
}
func (b setBuilder) claims(names ...string) setBuilder {
	for _, n := range names {
		b.s.Spec.VolumeClaimTemplates = append(b.s.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return b
}
func (b setBuilder) get() *appsv1.StatefulSet { return b.s }

// podState is a pod's state in a test.
type podState int

const (
	pending  podState = iota // created, not running
	running                  // running, not ready
	ready                    // running and ready
	failed                   // phase Failed
	deleting                 // ready, being deleted
)

// mkPod is set's pod of ordinal at revision rev in state st.
func mkPod(set *appsv1.StatefulSet, ordinal int, rev string, st podState) *corev1.Pod {
	pod := newPod(set, ordinal)
	setRevision(pod, rev)
	pod.UID = "uid-" + "pod"
	switch st {
	case pending:
		pod.Status.Phase = corev1.PodPending
	case running:
		pod.Status.Phase = corev1.PodRunning
	case ready, deleting:
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
		if st == deleting {
			pod.DeletionTimestamp = &metav1.Time{Time: now}
		}
	case failed:
		pod.Status.Phase = corev1.PodFailed
	}
	return pod
}

// runPlan plans set with pods, the current revision "old" and the update revision "new"
// (both with set's own template).
func runPlan(set *appsv1.StatefulSet, pods ...*corev1.Pod) plan {
	return planSync(planInput{set: set, currentSet: set, updateSet: set, currentRevision: "old", update: "new", pods: pods, now: now})
}

// describe renders a plan's phases as "phase: op pod, ...; phase: ..." (empty phases shown).
func describe(p plan) string {
	var phases []string
	for _, ph := range p.phases {
		var ops []string
		for _, o := range ph.ops {
			ops = append(ops, fmt.Sprintf("%s %s", o.kind, o.pod.Name))
		}
		phases = append(phases, string(ph.name)+": "+strings.Join(ops, ", "))
	}
	return strings.Join(phases, "; ")
}

func TestPlan(t *testing.T) {
	web := func() setBuilder { return newSet("web", 3) }
	tests := []struct {
		name string
		set  *appsv1.StatefulSet
		pods func(set *appsv1.StatefulSet) []*corev1.Pod
		want string
	}{
		{name: "ordered: first pod created alone", set: web().get(),
			want: "replicas: create web-0"},
		{name: "ordered: the next waits for its predecessor to be ready", set: web().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{mkPod(s, 0, "new", running)} },
			want: "replicas: "},
		{name: "ordered: a ready predecessor lets the next be created", set: web().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{mkPod(s, 0, "new", ready)} },
			want: "replicas: create web-1"},
		{name: "ordered: a gap is filled first", set: web().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "new", ready), mkPod(s, 2, "new", ready)}
			},
			want: "replicas: create web-1"},
		{name: "parallel: all created at once", set: web().parallel().get(),
			want: "replicas: create web-0, create web-1, create web-2; condemned: ; rolling: "},
		{name: "parallel: creates do not wait for readiness", set: web().parallel().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{mkPod(s, 0, "new", pending)} },
			want: "replicas: create web-1, create web-2; condemned: ; rolling: "},
		{name: "steady state", set: web().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "new", ready), mkPod(s, 1, "new", ready), mkPod(s, 2, "new", ready)}
			},
			want: "replicas: ; condemned: ; rolling: "},
		{name: "failed pod deleted, to be recreated", set: web().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "new", ready), mkPod(s, 1, "new", failed)}
			},
			want: "replicas: delete web-1"},
		{name: "scale down: highest ordinal first, one at a time", set: newSet("web", 1).get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "new", ready), mkPod(s, 1, "new", ready), mkPod(s, 2, "new", ready)}
			},
			want: "replicas: ; condemned: delete web-2"},
		{name: "scale down waits for the terminating pod", set: newSet("web", 1).get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "new", ready), mkPod(s, 1, "new", ready), mkPod(s, 2, "new", deleting)}
			},
			want: "replicas: ; condemned: "},
		{name: "scale down waits for an unready pod in range", set: newSet("web", 2).get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "new", ready), mkPod(s, 1, "new", running), mkPod(s, 2, "new", ready)}
			},
			want: "replicas: "},
		{name: "scale down waits for an unready condemned pod that is not the first unhealthy", set: newSet("web", 1).get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "new", ready), mkPod(s, 1, "new", running), mkPod(s, 2, "new", running)}
			},
			want: "replicas: ; condemned: "},
		{name: "scale down deletes the first unhealthy pod", set: newSet("web", 1).get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "new", ready), mkPod(s, 1, "new", ready), mkPod(s, 2, "new", running)}
			},
			want: "replicas: ; condemned: delete web-2"},
		{name: "parallel scale down deletes all at once", set: newSet("web", 1).parallel().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "new", ready), mkPod(s, 1, "new", ready), mkPod(s, 2, "new", ready)}
			},
			want: "replicas: ; condemned: delete web-2, delete web-1; rolling: "},
		{name: "rolling update: highest ordinal first", set: web().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "old", ready), mkPod(s, 1, "old", ready), mkPod(s, 2, "old", ready)}
			},
			want: "replicas: ; condemned: ; rolling: delete web-2"},
		{name: "rolling update waits for the updated pod", set: web().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "old", ready), mkPod(s, 1, "old", ready), mkPod(s, 2, "new", running)}
			},
			want: "replicas: "},
		{name: "rolling update goes on once it is ready", set: web().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "old", ready), mkPod(s, 1, "old", ready), mkPod(s, 2, "new", ready)}
			},
			want: "replicas: ; condemned: ; rolling: delete web-1"},
		{name: "partition keeps the pods below it", set: web().partition(2).get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "old", ready), mkPod(s, 1, "old", ready), mkPod(s, 2, "new", ready)}
			},
			want: "replicas: ; condemned: ; rolling: "},
		{name: "partition: pods at and above it roll", set: web().partition(1).get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "old", ready), mkPod(s, 1, "old", ready), mkPod(s, 2, "new", ready)}
			},
			want: "replicas: ; condemned: ; rolling: delete web-1"},
		{name: "maxUnavailable 2 deletes two", set: web().maxUnavailable(2).get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "old", ready), mkPod(s, 1, "old", ready), mkPod(s, 2, "old", ready)}
			},
			want: "replicas: ; condemned: ; rolling: delete web-2, delete web-1"},
		{name: "parallel rolling: unavailable old pods first, then the budget", set: web().parallel().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "old", running), mkPod(s, 1, "old", ready), mkPod(s, 2, "old", ready)}
			},
			want: "replicas: ; condemned: ; rolling: delete web-0"},
		{name: "OnDelete never deletes for an update", set: web().onDelete().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "old", ready), mkPod(s, 1, "old", ready), mkPod(s, 2, "old", ready)}
			},
			want: "replicas: ; condemned: "},
		{name: "ordinals.start shifts the range", set: newSet("web", 2).start(5).get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod { return []*corev1.Pod{mkPod(s, 5, "new", ready)} },
			want: "replicas: create web-6"},
		{name: "a pod below ordinals.start is condemned", set: newSet("web", 1).start(5).parallel().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				return []*corev1.Pod{mkPod(s, 0, "new", ready), mkPod(s, 5, "new", ready)}
			},
			want: "replicas: ; condemned: delete web-0; rolling: "},
		{name: "claims: no pod is created", set: web().claims("data").get(),
			want: "replicas: "},
		{name: "wrong identity label fixed", set: web().get(),
			pods: func(s *appsv1.StatefulSet) []*corev1.Pod {
				p := mkPod(s, 0, "new", ready)
				delete(p.Labels, appsv1.StatefulSetPodNameLabel)
				return []*corev1.Pod{p, mkPod(s, 1, "new", ready), mkPod(s, 2, "new", ready)}
			},
			want: "replicas: update web-0; condemned: ; rolling: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pods []*corev1.Pod
			if tt.pods != nil {
				pods = tt.pods(tt.set)
			}
			if got := describe(runPlan(tt.set, pods...)); got != tt.want {
				t.Errorf("plan:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPlanOrderedFlag(t *testing.T) {
	if !runPlan(newSet("web", 1).get()).ordered || runPlan(newSet("web", 1).parallel().get()).ordered {
		t.Error("OrderedReady plans run in order, Parallel ones in batches")
	}
}

func TestPlanStatus(t *testing.T) {
	set := newSet("web", 3).get()
	set.Spec.MinReadySeconds = 7200 // two hours: ready pods of an hour are not available
	pods := []*corev1.Pod{mkPod(set, 0, "old", ready), mkPod(set, 1, "new", running), mkPod(set, 4, "new", deleting)}
	p := runPlan(set, pods...)
	s := p.status
	if s.Replicas != 3 || s.ReadyReplicas != 2 || s.AvailableReplicas != 0 || s.CurrentReplicas != 1 || s.UpdatedReplicas != 1 {
		t.Errorf("status %+v", s)
	}
	if s.ObservedGeneration != 1 || s.CurrentRevision != "old" || s.UpdateRevision != "new" || s.CollisionCount == nil {
		t.Errorf("status %+v", s)
	}
}

func TestPlanClaimsCondition(t *testing.T) {
	set := newSet("web", 2).claims("data", "logs").get()
	p := runPlan(set)
	if p.claims == nil || p.claims.pod != "web-0" || p.claims.claim != "data-web-0" {
		t.Fatalf("claims block %+v", p.claims)
	}
	if len(p.status.Conditions) != 1 {
		t.Fatalf("conditions %+v", p.status.Conditions)
	}
	c := p.status.Conditions[0]
	want := "Create Claim data-web-0 for Pod web-0 in StatefulSet web failed error: persistent volumes are not bound or mounted by this cluster yet"
	if c.Type != ReplicaFailure || c.Status != corev1.ConditionTrue || c.Reason != "FailedCreate" || c.Message != want {
		t.Errorf("condition %+v", c)
	}

	// Recorded once, the condition keeps its transition time.
	set.Status.Conditions = p.status.Conditions
	later := planSync(planInput{set: set, currentSet: set, updateSet: set, currentRevision: "old", update: "new", now: now.Add(time.Hour)})
	if !later.status.Conditions[0].LastTransitionTime.Equal(&c.LastTransitionTime) || statusChanged(set, &later.status) && !sameConditions(set, later) {
		t.Errorf("condition rewritten: %+v", later.status.Conditions)
	}

	// Scaled to zero, nothing waits on claims: the condition goes.
	set.Spec.Replicas = ptr.To[int32](0)
	if p := runPlan(set); len(p.status.Conditions) != 0 || p.claims != nil {
		t.Errorf("scaled to 0: conditions %+v, claims %+v", p.status.Conditions, p.claims)
	}
}

func sameConditions(set *appsv1.StatefulSet, p plan) bool {
	return len(set.Status.Conditions) == len(p.status.Conditions) && set.Status.Conditions[0] == p.status.Conditions[0]
}

func TestPlanSetBeingDeleted(t *testing.T) {
	set := newSet("web", 3).get()
	set.DeletionTimestamp = &metav1.Time{Time: now}
	p := runPlan(set, mkPod(set, 0, "new", ready))
	if len(p.phases) != 0 || p.status.Replicas != 1 {
		t.Errorf("a set being deleted only reports: %s, %+v", describe(p), p.status)
	}
}

func TestNewVersionedPod(t *testing.T) {
	current := newSet("web", 3).partition(2).get()
	update := current.DeepCopy()
	update.Spec.Template.Spec.Containers[0].Image = "img:2"
	low := newVersionedPod(current, update, "old", "new", 1)
	high := newVersionedPod(current, update, "old", "new", 2)
	if revisionOf(low) != "old" || low.Spec.Containers[0].Image != "img:1" {
		t.Errorf("below the partition: %s %s", revisionOf(low), low.Spec.Containers[0].Image)
	}
	if revisionOf(high) != "new" || high.Spec.Containers[0].Image != "img:2" {
		t.Errorf("at the partition: %s %s", revisionOf(high), high.Spec.Containers[0].Image)
	}
}

func TestNewPodIdentity(t *testing.T) {
	set := newSet("web", 3).get()
	pod := newPod(set, 2)
	if pod.Name != "web-2" || pod.GenerateName != "" || pod.Namespace != "ns" || pod.Spec.Hostname != "web-2" || pod.Spec.Subdomain != "web" {
		t.Errorf("pod %s/%s (generateName %q) hostname %q subdomain %q", pod.Namespace, pod.Name, pod.GenerateName, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	if pod.Labels[appsv1.StatefulSetPodNameLabel] != "web-2" || pod.Labels[appsv1.PodIndexLabel] != "2" || pod.Labels["app"] != "web" {
		t.Errorf("labels %v", pod.Labels)
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "StatefulSet" || ref.Name != "web" {
		t.Errorf("controller %+v", ref)
	}
	if !identityMatches(set, pod) || !isMemberOf(set, pod) {
		t.Error("a new pod's identity does not match")
	}
	if parent, o := parentAndOrdinal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-x"}}); parent != "" || o != -1 {
		t.Errorf("web-x: %q %d", parent, o)
	}
	if parent, o := parentAndOrdinal(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "my-web-12"}}); parent != "my-web" || o != 12 {
		t.Errorf("my-web-12: %q %d", parent, o)
	}
}

func TestMaxUnavailable(t *testing.T) {
	pct := intstr.FromString("50%")
	small := intstr.FromString("10%")
	for _, tt := range []struct {
		v        *intstr.IntOrString
		replicas int
		want     int
	}{{nil, 5, 1}, {&pct, 5, 2}, {&small, 5, 1}, {ptr.To(intstr.FromInt32(3)), 5, 3}} {
		if got := statefulSetMaxUnavailable(tt.v, tt.replicas); got != tt.want {
			t.Errorf("maxUnavailable(%v, %d) = %d, want %d", tt.v, tt.replicas, got, tt.want)
		}
	}
}

func TestRevisionsToTruncate(t *testing.T) {
	set := newSet("web", 1).get()
	set.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	var revs []*appsv1.ControllerRevision
	for i := 1; i <= 5; i++ {
		revs = append(revs, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i)}, Revision: int64(i)})
	}
	pod := mkPod(set, 0, "web-2", ready)
	got := revisionsToTruncate(set, []*corev1.Pod{pod}, revs, revs[3], revs[4])
	// Live: web-4 (current), web-5 (update), web-2 (a pod's); history web-1, web-3, limit 1.
	if len(got) != 1 || got[0].Name != "web-1" {
		t.Errorf("truncate %v", got)
	}
}

func TestRevisionRoundTrip(t *testing.T) {
	set := newSet("web", 1).get()
	set.Annotations = map[string]string{"note": "x"}
	rev, err := newRevision(set, 1, new(int32))
	if err != nil {
		t.Fatal(err)
	}
	// Upstream's getPatch: the template alone, replaced whole.
	if got := string(rev.Data.Raw); !strings.HasPrefix(got, `{"spec":{"template":{"$patch":"replace","metadata":`) || !strings.Contains(got, `"image":"img:1"`) {
		t.Errorf("revision data %s", got)
	}
	if rev.Annotations["note"] != "x" || rev.Labels["app"] != "web" || !strings.HasPrefix(rev.Name, "web-") {
		t.Errorf("revision %s: annotations %v labels %v", rev.Name, rev.Annotations, rev.Labels)
	}
	changed := set.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "img:2"
	changed.Spec.Replicas = ptr.To[int32](5)
	restored, err := applyRevision(changed, rev)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Spec.Template.Spec.Containers[0].Image != "img:1" || *restored.Spec.Replicas != 5 {
		t.Errorf("restored image %s replicas %d: only the template comes back", restored.Spec.Template.Spec.Containers[0].Image, *restored.Spec.Replicas)
	}
	same, _ := newRevision(set, 2, new(int32))
	if !matchesLatest(set, same, rev) {
		t.Error("a set matches the revision of its own template")
	}
}

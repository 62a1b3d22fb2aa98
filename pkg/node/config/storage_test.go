package config

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/node/types"
)

// podBuilder builds test pods: MakePod("a").Image("x").Obj().
type podBuilder struct{ pod *v1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: ktypes.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}}
}

func (b *podBuilder) uid(uid string) *podBuilder { b.pod.UID = ktypes.UID(uid); return b }
func (b *podBuilder) image(image string) *podBuilder {
	b.pod.Spec.Containers[0].Image = image
	return b
}
func (b *podBuilder) label(k, v string) *podBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}
func (b *podBuilder) annotation(k, v string) *podBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[k] = v
	return b
}
func (b *podBuilder) phase(p v1.PodPhase) *podBuilder { b.pod.Status.Phase = p; return b }
func (b *podBuilder) deleting() *podBuilder {
	ts := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b.pod.DeletionTimestamp = &ts
	b.pod.DeletionGracePeriodSeconds = ptr.To[int64](30)
	return b
}
func (b *podBuilder) obj() *v1.Pod { return b.pod }

func set(pods ...*v1.Pod) types.PodUpdate { return types.PodUpdate{Op: types.SET, Pods: pods} }
func op(o types.PodOperation, pods ...*v1.Pod) types.PodUpdate {
	return types.PodUpdate{Op: o, Pods: pods}
}

// describe renders updates as "REMOVE:b ADD:a,c" for comparison.
func describe(updates []types.PodUpdate) string {
	var parts []string
	for _, u := range updates {
		names := make([]string, len(u.Pods))
		for i, p := range u.Pods {
			names[i] = p.Name
		}
		parts = append(parts, fmt.Sprintf("%s:%s", u.Op, strings.Join(names, ",")))
	}
	return strings.Join(parts, " ")
}

func TestMerge(t *testing.T) {
	type step struct {
		source string
		update types.PodUpdate
		want   string // describe() of the emitted updates
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "a first SET adds its pods, in the order sent",
			steps: []step{
				{"file", set(makePod("b").obj(), makePod("a").obj()), "ADD:b,a"},
			},
		},
		{
			name: "the same SET again emits nothing",
			steps: []step{
				{"file", set(makePod("a").obj()), "ADD:a"},
				{"file", set(makePod("a").obj()), ""},
			},
		},
		{
			name: "a first empty SET emits an empty ADD, later ones nothing",
			steps: []step{
				{"file", set(), "ADD:"},
				{"file", set(), ""},
			},
		},
		{
			name: "a SET removes, adds, updates, deletes and reconciles, in that order",
			steps: []step{
				{"api", set(makePod("a").obj(), makePod("b").obj(), makePod("c").obj(), makePod("d").obj(), makePod("e").obj()), "ADD:a,b,c,d,e"},
				{"api", set(
					makePod("e").phase(v1.PodRunning).obj(), // status only
					makePod("d").deleting().obj(),           // graceful deletion
					makePod("c").image("busybox:2").obj(),   // spec
					makePod("f").obj(),                      // new
					makePod("a").obj(),                      // unchanged
				), "REMOVE:b ADD:f UPDATE:c DELETE:d RECONCILE:e"},
			},
		},
		{
			name: "removed pods come out sorted by namespace and name",
			steps: []step{
				{"api", set(makePod("z").obj(), makePod("m").obj(), makePod("a").obj()), "ADD:z,m,a"},
				{"api", set(), "REMOVE:a,m,z"},
			},
		},
		{
			name: "labels and annotations are updates; local annotations are not",
			steps: []step{
				{"api", set(makePod("a").obj(), makePod("b").obj(), makePod("c").obj()), "ADD:a,b,c"},
				{"api", set(
					makePod("a").label("app", "x").obj(),
					makePod("b").annotation("team", "y").obj(),
					makePod("c").annotation(types.ConfigFirstSeenAnnotationKey, "then").annotation(types.ConfigSourceAnnotationKey, "other").obj(),
				), "UPDATE:a,b"},
			},
		},
		{
			name: "a spec change together with a status change is one UPDATE",
			steps: []step{
				{"api", set(makePod("a").obj()), "ADD:a"},
				{"api", set(makePod("a").image("busybox:2").phase(v1.PodRunning).obj()), "UPDATE:a"},
			},
		},
		{
			name: "a new pod that is already being deleted is an ADD",
			steps: []step{
				{"api", set(makePod("a").deleting().obj()), "ADD:a"},
				{"api", set(makePod("a").deleting().obj()), ""},
			},
		},
		{
			name: "a pod recreated under the same name with a new UID is removed and added",
			steps: []step{
				{"api", set(makePod("a").obj()), "ADD:a"},
				{"api", set(makePod("a").uid("uid-a2").obj()), "REMOVE:a ADD:a"},
			},
		},
		{
			name: "incremental operations change only the pods they name",
			steps: []step{
				{"api", set(makePod("a").obj(), makePod("b").obj()), "ADD:a,b"},
				{"api", op(types.ADD, makePod("c").obj()), "ADD:c"},
				{"api", op(types.UPDATE, makePod("a").image("busybox:2").obj()), "UPDATE:a"},
				{"api", op(types.UPDATE, makePod("a").image("busybox:2").obj()), ""},
				{"api", op(types.UPDATE, makePod("b").phase(v1.PodSucceeded).obj()), "RECONCILE:b"},
				{"api", op(types.UPDATE, makePod("c").deleting().obj()), "DELETE:c"},
				{"api", op(types.REMOVE, makePod("c").obj(), makePod("nope").obj()), "REMOVE:c"},
				{"api", op(types.REMOVE, makePod("c").obj()), ""},
				{"api", set(makePod("a").image("busybox:2").obj()), "REMOVE:b"},
			},
		},
		{
			name: "an incremental update of an unknown pod adds it",
			steps: []step{
				{"api", op(types.UPDATE, makePod("a").obj()), "ADD:a"},
				{"api", op(types.DELETE, makePod("b").obj()), "ADD:b"},
				{"api", op(types.RECONCILE, makePod("a").phase(v1.PodRunning).obj()), "RECONCILE:a"},
			},
		},
		{
			name: "sources are independent",
			steps: []step{
				{"file", set(makePod("a").obj()), "ADD:a"},
				{"http", set(makePod("a").obj(), makePod("b").obj()), "ADD:a,b"},
				{"file", set(), "REMOVE:a"},
				{"http", set(makePod("a").obj(), makePod("b").obj()), ""},
				{"http", set(makePod("b").obj()), "REMOVE:a"},
			},
		},
		{
			name: "a second pod of the same name in one update is ignored",
			steps: []step{
				{"file", set(makePod("a").obj(), makePod("a").uid("other").obj(), makePod("b").obj()), "ADD:a,b"},
			},
		},
		{
			name: "a second pod of the same UID in one update is ignored",
			steps: []step{
				{"file", set(makePod("a").obj(), makePod("b").uid("uid-a").obj()), "ADD:a"},
			},
		},
		{
			name: "an unknown operation changes nothing",
			steps: []step{
				{"api", set(makePod("a").obj()), "ADD:a"},
				{"api", op(types.PodOperation(42), makePod("b").obj()), ""},
				{"api", set(makePod("a").obj()), ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newPodStorage(clocktesting.NewFakePassiveClock(time.Now()))
			seen := map[string]bool{}
			for i, st := range tt.steps {
				firstSet := st.update.Op == types.SET && !seen[st.source]
				if st.update.Op == types.SET {
					seen[st.source] = true
				}
				out, _ := s.merge(klog.Background(), st.source, st.update, firstSet)
				if got := describe(out); got != st.want {
					t.Fatalf("step %d: got %q, want %q", i, got, st.want)
				}
				for _, u := range out {
					if u.Source != st.source {
						t.Errorf("step %d: update from %q, want %q", i, u.Source, st.source)
					}
				}
			}
		})
	}
}

func TestMergeAnnotatesAndCopies(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC))
	s := newPodStorage(clk)
	logger := klog.Background()
	in := makePod("a").annotation("team", "x").obj()

	out, _ := s.merge(logger, "api", set(in), true)
	added := out[0].Pods[0]
	if got := added.Annotations[types.ConfigSourceAnnotationKey]; got != "api" {
		t.Errorf("source annotation = %q, want api", got)
	}
	firstSeen := added.Annotations[types.ConfigFirstSeenAnnotationKey]
	if firstSeen != "2026-03-04T05:06:07.000000008Z" {
		t.Errorf("first-seen annotation = %q", firstSeen)
	}
	if len(in.Annotations) != 1 {
		t.Errorf("the source's pod was changed: %v", in.Annotations)
	}
	added.Spec.Containers[0].Image = "mutated"

	// An update keeps the first-seen time and carries the source's new metadata.
	clk.SetTime(clk.Now().Add(time.Hour))
	next := makePod("a").annotation("team", "y").obj()
	next.ResourceVersion = "7"
	out, _ = s.merge(logger, "api", set(next), false)
	if describe(out) != "UPDATE:a" {
		t.Fatalf("got %s, want UPDATE:a (the storage must not share pods with its output)", describe(out))
	}
	updated := out[0].Pods[0]
	if got := updated.Annotations[types.ConfigFirstSeenAnnotationKey]; got != firstSeen {
		t.Errorf("first-seen annotation = %q, want %q kept", got, firstSeen)
	}
	if updated.Annotations["team"] != "y" || updated.ResourceVersion != "7" {
		t.Errorf("update lost the source's metadata: %v rv=%q", updated.Annotations, updated.ResourceVersion)
	}
}

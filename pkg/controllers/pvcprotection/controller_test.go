package pvcprotection

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

const ns = "ns"

func claim(name string, deleting bool, finalizers ...string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Finalizers: finalizers}}
	if deleting {
		pvc.DeletionTimestamp = ptr.To(metav1.Now())
	}
	return pvc
}

// podWith is a pod on node1 whose volume "data" names claim.
func podWith(name, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-pod-" + name)},
		Spec: corev1.PodSpec{NodeName: "node1", Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
	}
}

// ephemeralPod is a pod on node1 with a generic ephemeral volume "scratch" (claim <name>-scratch).
func ephemeralPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-pod-" + name)},
		Spec: corev1.PodSpec{NodeName: "node1", Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{}}}}},
	}
}

// ownedBy makes pvc controlled by pod, as the ephemeral volume controller makes it.
func ownedBy(pvc *corev1.PersistentVolumeClaim, pod *corev1.Pod) *corev1.PersistentVolumeClaim {
	pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	return pvc
}

type harness struct {
	t      *testing.T
	client *fake.Clientset
	c      *Controller
}

// newHarness caches claims and cachedPods in the informers; the API server holds the claims,
// cachedPods and livePods (pods the cache has not seen yet).
func newHarness(t *testing.T, claims []*corev1.PersistentVolumeClaim, cachedPods, livePods []*corev1.Pod) *harness {
	var stored []runtime.Object
	for _, o := range claims {
		stored = append(stored, o)
	}
	for _, o := range append(slices.Clone(cachedPods), livePods...) {
		stored = append(stored, o)
	}
	h := &harness{t: t, client: fake.NewClientset(stored...)}
	factory := informers.NewSharedInformerFactory(h.client, 0)
	h.c = NewController(h.client, factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().Pods())
	for _, o := range claims {
		_ = factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer().Add(o)
	}
	for _, o := range cachedPods {
		_ = factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
	}
	return h
}

func (h *harness) sync(name string) {
	h.t.Helper()
	if err := h.c.sync(context.Background(), ns+"/"+name); err != nil {
		h.t.Fatal(err)
	}
}

// verbs are the client's calls, as "verb resource".
func (h *harness) verbs() []string {
	var out []string
	for _, a := range h.client.Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

func (h *harness) finalizers(name string) []string {
	h.t.Helper()
	pvc, err := h.client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return pvc.Finalizers
}

func TestUnusedDeletedClaimLosesOnlyTheFinalizer(t *testing.T) {
	pvc := claim("data", true, "example.com/other", Finalizer)
	other := podWith("other", "another-claim")
	h := newHarness(t, []*corev1.PersistentVolumeClaim{pvc}, []*corev1.Pod{other}, nil)
	h.sync("data")
	if got := h.verbs(); !slices.Equal(got, []string{"list pods", "update persistentvolumeclaims"}) {
		t.Fatalf("calls %v, want a live list then an update", got)
	}
	if got := h.finalizers("data"); !slices.Equal(got, []string{"example.com/other"}) {
		t.Errorf("finalizers %v", got)
	}
}

func TestUsedClaimKept(t *testing.T) {
	for name, tc := range map[string]struct {
		cached, live []*corev1.Pod
		wantList     bool
	}{
		"pod in the cache":             {cached: []*corev1.Pod{podWith("web", "data")}},
		"pod not in the cache yet":     {live: []*corev1.Pod{podWith("web", "data")}, wantList: true},
		"finished pod, still existing": {cached: []*corev1.Pod{withPhase(podWith("web", "data"), corev1.PodSucceeded)}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, []*corev1.PersistentVolumeClaim{claim("data", true, Finalizer)}, tc.cached, tc.live)
			h.sync("data")
			want := []string(nil)
			if tc.wantList {
				want = []string{"list pods"}
			}
			if got := h.verbs(); !slices.Equal(got, want) {
				t.Errorf("calls %v, want %v", got, want)
			}
		})
	}
}

func withPhase(pod *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	pod.Status.Phase = phase
	return pod
}

func TestPodUsesClaim(t *testing.T) {
	eph := ephemeralPod("job")
	ephClaim := ownedBy(claim("job-scratch", true, Finalizer), eph)
	unscheduled := podWith("pending", "data")
	unscheduled.Spec.NodeName = ""
	shutDown := ephemeralPod("job")
	shutDown.DeletionTimestamp = ptr.To(metav1.Now())
	shutDown.DeletionGracePeriodSeconds = ptr.To[int64](0)
	elsewhere := podWith("web", "data")
	elsewhere.Namespace = "other"
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		pvc  *corev1.PersistentVolumeClaim
		want bool
	}{
		{"claim volume", podWith("web", "data"), claim("data", true), true},
		{"other claim", podWith("web", "logs"), claim("data", true), false},
		{"other namespace", elsewhere, claim("data", true), false},
		{"unscheduled pod", unscheduled, claim("data", true), false},
		{"failed pod", withPhase(podWith("web", "data"), corev1.PodFailed), claim("data", true), true},
		{"ephemeral claim of the pod", eph, ephClaim, true},
		{"ephemeral name, not the pod's claim", eph, claim("job-scratch", true), false},
		{"ephemeral claim, pod shut down", shutDown, ephClaim, false},
	} {
		if got := podUsesClaim(tc.pod, tc.pvc); got != tc.want {
			t.Errorf("%s: podUsesClaim = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEphemeralClaimFreedWhenPodGone(t *testing.T) {
	pod := ephemeralPod("job")
	pvc := ownedBy(claim("job-scratch", true, Finalizer), pod)
	h := newHarness(t, []*corev1.PersistentVolumeClaim{pvc}, []*corev1.Pod{pod}, nil)
	h.sync("job-scratch")
	if len(h.finalizers("job-scratch")) != 1 {
		t.Fatal("finalizer removed while the pod runs")
	}
	h = newHarness(t, []*corev1.PersistentVolumeClaim{pvc}, nil, nil)
	h.sync("job-scratch")
	if len(h.finalizers("job-scratch")) != 0 {
		t.Error("finalizer kept with no pod")
	}
}

func TestLiveClaimGetsTheFinalizer(t *testing.T) {
	h := newHarness(t, []*corev1.PersistentVolumeClaim{claim("old", false)}, nil, nil)
	if h.c.queue.Len() != 0 {
		t.Fatal("queued before its event") // the harness adds to the cache without events
	}
	h.c.claimChanged(claim("old", false))
	if h.c.queue.Len() != 1 {
		t.Fatal("claim without the finalizer not queued")
	}
	h.sync("old")
	if got := h.finalizers("old"); !slices.Equal(got, []string{Finalizer}) {
		t.Errorf("finalizers %v", got)
	}
}

func TestIgnoredClaims(t *testing.T) {
	// Live with the finalizer; deleting without it; absent.
	h := newHarness(t, []*corev1.PersistentVolumeClaim{claim("live", false, Finalizer), claim("gone", true, "x")}, nil, nil)
	h.c.claimChanged(claim("live", false, Finalizer))
	h.c.claimChanged(claim("gone", true, "x"))
	if h.c.queue.Len() != 0 {
		t.Errorf("queued %d claims, want none", h.c.queue.Len())
	}
	for _, name := range []string{"live", "gone", "absent"} {
		h.sync(name)
	}
	if got := h.verbs(); len(got) != 0 {
		t.Errorf("calls %v", got)
	}
}

func TestPodEventsQueueItsClaims(t *testing.T) {
	running := podWith("web", "data")
	running.Spec.Volumes = append(running.Spec.Volumes, ephemeralPod("web").Spec.Volumes...)
	for _, tc := range []struct {
		name     string
		old, cur *corev1.Pod
		deleted  bool
		want     int
	}{
		{"running pod updated", running, running, false, 0},
		{"pod deleted", nil, running, true, 2},
		{"pod succeeded", running, withPhase(running.DeepCopy(), corev1.PodSucceeded), false, 2},
		{"pod unscheduled", nil, func() *corev1.Pod { p := running.DeepCopy(); p.Spec.NodeName = ""; return p }(), false, 2},
		{"pod replaced under its name", running, func() *corev1.Pod { p := podWith("web", "other"); p.UID = "new"; return p }(), false, 2},
	} {
		h := newHarness(t, nil, nil, nil)
		var old any
		if tc.old != nil {
			old = tc.old
		}
		h.c.podChanged(old, tc.cur, tc.deleted)
		if h.c.queue.Len() != tc.want {
			t.Errorf("%s: queued %d claims, want %d", tc.name, h.c.queue.Len(), tc.want)
		}
	}
}

func TestConflictIsRetried(t *testing.T) {
	h := newHarness(t, []*corev1.PersistentVolumeClaim{claim("data", true, Finalizer)}, nil, nil)
	h.client.PrependReactor("update", "persistentvolumeclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errConflict
	})
	if err := h.c.sync(context.Background(), ns+"/data"); err == nil {
		t.Fatal("a conflicting update was not an error to retry")
	}
}

var errConflict = apierrors.NewConflict(schema.GroupResource{Resource: "persistentvolumeclaims"}, "data", errors.New("changed"))

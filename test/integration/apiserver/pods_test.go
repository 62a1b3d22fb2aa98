package apiserver

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestPodDefaultsAndAdmission: a minimal pod comes back as a real cluster would show it.
func TestPodDefaultsAndAdmission(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	pod, err := c.Client.CoreV1().Pods(ns).Create(ctx, simplePod("defaults"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	ctr := s.Containers[0]
	checks := []struct {
		what      string
		got, want interface{}
	}{
		{"restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways},
		{"dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst},
		{"terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"enableServiceLinks", *s.EnableServiceLinks, true},
		{"serviceAccountName", s.ServiceAccountName, "default"},
		{"priority", *s.Priority, int32(0)},
		{"preemptionPolicy", *s.PreemptionPolicy, corev1.PreemptLowerPriority},
		{"imagePullPolicy (tagged)", ctr.ImagePullPolicy, corev1.PullIfNotPresent},
		{"terminationMessagePath", ctr.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", ctr.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"tolerations", len(s.Tolerations), 2},
		{"phase", pod.Status.Phase, corev1.PodPending},
		{"qosClass", pod.Status.QOSClass, corev1.PodQOSBestEffort},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.what, ch.got, ch.want)
		}
	}
	for _, tol := range s.Tolerations {
		if tol.Effect != corev1.TaintEffectNoExecute || tol.TolerationSeconds == nil || *tol.TolerationSeconds != 300 {
			t.Errorf("default toleration %+v, want NoExecute for 300s", tol)
		}
	}

	latest := simplePod("latest")
	latest.Spec.Containers[0].Image = "busybox"
	latest.Spec.PriorityClassName = "system-cluster-critical"
	latest.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: mustQuantity("1"), corev1.ResourceMemory: mustQuantity("64Mi")}
	pod, err = c.Client.CoreV1().Pods(ns).Create(ctx, latest, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Spec.Containers[0].ImagePullPolicy; got != corev1.PullAlways {
		t.Errorf("imagePullPolicy of an untagged image = %s, want Always", got)
	}
	if got := *pod.Spec.Priority; got != 2000000000 {
		t.Errorf("priority from system-cluster-critical = %d, want 2000000000", got)
	}
	if got := pod.Status.QOSClass; got != corev1.PodQOSGuaranteed {
		t.Errorf("qosClass with limits only = %s, want Guaranteed (requests default to limits)", got)
	}

	missing := simplePod("no-class")
	missing.Spec.PriorityClassName = "does-not-exist"
	_, err = c.Client.CoreV1().Pods(ns).Create(ctx, missing, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !contains(err.Error(), "no PriorityClass with name does-not-exist was found") {
		t.Errorf("pod with an unknown priority class: %v, want 403 naming the class", err)
	}
	noSA := simplePod("no-sa")
	noSA.Spec.ServiceAccountName = "nobody"
	_, err = c.Client.CoreV1().Pods(ns).Create(ctx, noSA, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !contains(err.Error(), `serviceaccount "nobody" not found`) {
		t.Errorf("pod with an unknown service account: %v, want 403", err)
	}
}

// TestPodBindingAndStatus: a pod is bound once, PodScheduled follows, status is the status
// subresource's to change.
func TestPodBindingAndStatus(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	pods := c.Client.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, simplePod("bound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := func(node string) error {
		return pods.Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: "bound"},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
	}
	if err := bind("node-a"); err != nil {
		t.Fatalf("bind: %v", err)
	}
	pod, err := pods.Get(ctx, "bound", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != "node-a" {
		t.Errorf("nodeName = %q after binding", pod.Spec.NodeName)
	}
	if cond := podCondition(pod, corev1.PodScheduled); cond == nil || cond.Status != corev1.ConditionTrue {
		t.Errorf("PodScheduled = %+v, want True", cond)
	}
	err = bind("node-b")
	if !apierrors.IsConflict(err) || !contains(err.Error(), `pod bound is already assigned to node "node-a"`) {
		t.Errorf("second bind: %v, want a conflict naming node-a", err)
	}

	// Status goes through pods/status; the main resource ignores it.
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = "10.244.0.5"
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.5"}}
	pod.Status.HostIP = "127.0.0.1"
	updated, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if updated.Status.Phase != corev1.PodRunning || updated.Status.PodIP != "10.244.0.5" {
		t.Errorf("status after UpdateStatus: %+v", updated.Status)
	}
	updated.Status.Phase = corev1.PodFailed
	updated.Labels["changed"] = "yes"
	again, err := pods.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if again.Status.Phase != corev1.PodRunning || again.Labels["changed"] != "yes" {
		t.Errorf("main resource update: phase %s labels %v; want phase kept and labels changed", again.Status.Phase, again.Labels)
	}

	// Only the fields Kubernetes lets change may change in a pod's spec.
	again.Spec.Containers[0].Image = "busybox:1.37"
	if _, err := pods.Update(ctx, again, metav1.UpdateOptions{}); err != nil {
		t.Errorf("changing the image: %v", err)
	}
	again, _ = pods.Get(ctx, "bound", metav1.GetOptions{})
	again.Spec.Containers[0].Name = "renamed"
	_, err = pods.Update(ctx, again, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !contains(err.Error(), "pod updates may not change fields other than") {
		t.Errorf("renaming a container: %v, want 422 'pod updates may not change fields ...'", err)
	}
}

// TestPodGracefulDeletion: a bound pod waits for its node; an unbound one goes at once;
// finalizers hold an object until they are removed.
func TestPodGracefulDeletion(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	pods := c.Client.CoreV1().Pods(ns)

	if _, err := pods.Create(ctx, simplePod("unbound"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "unbound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "unbound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("an unbound pod must go at once: %v", err)
	}

	bound := simplePod("bound")
	bound.Spec.NodeName = "node-a"
	if _, err := pods.Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := pods.Get(ctx, "bound", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("a bound pod must stay until its node confirms: %v", err)
	}
	if pod.DeletionTimestamp == nil || pod.DeletionGracePeriodSeconds == nil || *pod.DeletionGracePeriodSeconds != 30 {
		t.Errorf("deletionTimestamp %v, deletionGracePeriodSeconds %v; want set, 30", pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds)
	}
	if time.Until(pod.DeletionTimestamp.Time) < 20*time.Second {
		t.Errorf("deletionTimestamp %v should be about 30 s ahead", pod.DeletionTimestamp)
	}
	// The node agent confirms with grace 0.
	if err := pods.Delete(ctx, "bound", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "bound", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the grace-0 delete: %v, want not found", err)
	}

	held := simplePod("held")
	held.Finalizers = []string{"example.com/hold"}
	if _, err := pods.Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err = pods.Get(ctx, "held", metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp == nil {
		t.Fatalf("a pod with a finalizer must stay, marked for deletion: %v", err)
	}
	pod.Finalizers = nil
	if _, err := pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after removing the finalizer: %v, want not found", err)
	}
}

// TestPodEviction: an eviction deletes the pod gracefully and says why.
func TestPodEviction(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	pods := c.Client.CoreV1().Pods(ns)
	p := simplePod("evicted")
	p.Spec.NodeName = "node-a"
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evicted", Namespace: ns}})
	if err != nil {
		t.Fatalf("evict: %v", err)
	}
	pod, err := pods.Get(ctx, "evicted", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.DeletionTimestamp == nil {
		t.Error("an evicted bound pod must be terminating")
	}
	if cond := podCondition(pod, corev1.DisruptionTarget); cond == nil || cond.Reason != "EvictionByEvictionAPI" {
		t.Errorf("DisruptionTarget condition = %+v, want reason EvictionByEvictionAPI", cond)
	}
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

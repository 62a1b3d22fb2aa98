package evaluator

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// equal compares lists by value, naming the first difference.
func equal(t *testing.T, what string, got, want corev1.ResourceList) {
	t.Helper()
	if !quota.Equals(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func podWith(containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: containers}}
}

func TestPodUsage(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{"best effort", podWith(container("c", nil, nil)), list("count/pods", "1", "pods", "1")},
		{"requests and limits", podWith(
			container("a", list("cpu", "100m", "memory", "64Mi"), list("cpu", "1")),
			container("b", list("cpu", "200m", "ephemeral-storage", "1Gi"), list("memory", "128Mi"))),
			list("count/pods", "1", "pods", "1", "cpu", "300m", "requests.cpu", "300m", "limits.cpu", "1",
				"memory", "64Mi", "requests.memory", "64Mi", "limits.memory", "128Mi",
				"ephemeral-storage", "1Gi", "requests.ephemeral-storage", "1Gi")},
		{"init container larger", func() *corev1.Pod {
			p := podWith(container("a", list("cpu", "100m"), nil))
			p.Spec.InitContainers = []corev1.Container{container("i", list("cpu", "2"), nil)}
			return p
		}(), list("count/pods", "1", "pods", "1", "cpu", "2", "requests.cpu", "2")},
		{"hugepages and extended", podWith(container("a", list("hugepages-2Mi", "4Mi", "example.com/gpu", "2"), nil)),
			list("count/pods", "1", "pods", "1", "hugepages-2Mi", "4Mi", "requests.hugepages-2Mi", "4Mi", "requests.example.com/gpu", "2")},
		{"succeeded", func() *corev1.Pod {
			p := podWith(container("a", list("cpu", "1"), nil))
			p.Status.Phase = corev1.PodSucceeded
			return p
		}(), list("count/pods", "1")},
		{"deleted past its grace period", func() *corev1.Pod {
			p := podWith(container("a", list("cpu", "1"), nil))
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
			p.DeletionGracePeriodSeconds = ptr.To[int64](30)
			return p
		}(), list("count/pods", "1")},
		{"deleted within its grace period", func() *corev1.Pod {
			p := podWith(container("a", list("cpu", "1"), nil))
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(-10 * time.Second)}
			p.DeletionGracePeriodSeconds = ptr.To[int64](30)
			return p
		}(), list("count/pods", "1", "pods", "1", "cpu", "1", "requests.cpu", "1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			equal(t, "usage", PodUsage(tc.pod, now), tc.want)
		})
	}
}

func TestPodConstraints(t *testing.T) {
	e := &podEvaluator{clock: clock.RealClock{}}
	pod := podWith(container("a", list("cpu", "1"), list("cpu", "1")), container("b", list("memory", "1Gi"), nil))
	pod.Spec.InitContainers = []corev1.Container{container("init", nil, nil)}
	for _, tc := range []struct {
		required []corev1.ResourceName
		want     string
	}{
		{[]corev1.ResourceName{"pods", "count/pods", "services"}, ""},
		{[]corev1.ResourceName{"limits.cpu"}, "must specify limits.cpu for: b,init"},
		{[]corev1.ResourceName{"requests.cpu", "memory"}, "must specify memory for: a,init; requests.cpu for: b,init"},
		// Only cpu and memory are required of every container; storage is not.
		{[]corev1.ResourceName{"requests.ephemeral-storage"}, ""},
	} {
		err := e.Constraints(tc.required, pod)
		if got := errString(err); got != tc.want {
			t.Errorf("Constraints(%v) = %q, want %q", tc.required, got, tc.want)
		}
	}
	// Pod-level resources state them for every container.
	pod.Spec.Resources = &corev1.ResourceRequirements{Limits: list("cpu", "2")}
	if err := e.Constraints([]corev1.ResourceName{"limits.cpu"}, pod); err != nil {
		t.Errorf("with pod-level resources: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestPodScopes(t *testing.T) {
	bestEffort := podWith(container("a", nil, nil))
	burstable := podWith(container("a", list("cpu", "1"), nil))
	terminating := podWith(container("a", nil, nil))
	terminating.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
	high := podWith(container("a", nil, nil))
	high.Spec.PriorityClassName = "high"
	cross := podWith(container("a", nil, nil))
	cross.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1,
			PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone", NamespaceSelector: &metav1.LabelSelector{}}}}}}
	exists := func(s corev1.ResourceQuotaScope) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}
	}
	in := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}
	notIn := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpNotIn, Values: []string{"high"}}
	for _, tc := range []struct {
		name  string
		scope corev1.ScopedResourceSelectorRequirement
		pod   *corev1.Pod
		want  bool
	}{
		{"best effort", exists(corev1.ResourceQuotaScopeBestEffort), bestEffort, true},
		{"burstable is not best effort", exists(corev1.ResourceQuotaScopeBestEffort), burstable, false},
		{"not best effort", exists(corev1.ResourceQuotaScopeNotBestEffort), burstable, true},
		{"terminating", exists(corev1.ResourceQuotaScopeTerminating), terminating, true},
		{"not terminating", exists(corev1.ResourceQuotaScopeNotTerminating), terminating, false},
		{"priority class exists", exists(corev1.ResourceQuotaScopePriorityClass), high, true},
		{"no priority class", exists(corev1.ResourceQuotaScopePriorityClass), bestEffort, false},
		{"priority class in", in, high, true},
		{"priority class in, none", in, bestEffort, false},
		{"priority class not in, none", notIn, bestEffort, true},
		{"cross-namespace affinity", exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), cross, true},
		{"no cross-namespace affinity", exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), bestEffort, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podMatchesScope(tc.scope, tc.pod)
			if err != nil || got != tc.want {
				t.Errorf("podMatchesScope = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestServiceUsage(t *testing.T) {
	ports := []corev1.ServicePort{{Port: 80}, {Port: 443, NodePort: 30443}}
	for _, tc := range []struct {
		name string
		spec corev1.ServiceSpec
		want corev1.ResourceList
	}{
		{"cluster IP", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports},
			list("count/services", "1", "services", "1", "services.nodeports", "0", "services.loadbalancers", "0")},
		{"node port", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports},
			list("count/services", "1", "services", "1", "services.nodeports", "2", "services.loadbalancers", "0")},
		{"load balancer", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports},
			list("count/services", "1", "services", "1", "services.nodeports", "2", "services.loadbalancers", "1")},
		{"load balancer without node ports", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports, AllocateLoadBalancerNodePorts: ptr.To(false)},
			list("count/services", "1", "services", "1", "services.nodeports", "1", "services.loadbalancers", "1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			equal(t, "usage", ServiceUsage(&corev1.Service{Spec: tc.spec}), tc.want)
		})
	}
}

func TestClaimUsage(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To("gold"),
		Resources:        corev1.VolumeResourceRequirements{Requests: list("storage", "1500m")},
	}}
	equal(t, "usage", ClaimUsage(claim), list("persistentvolumeclaims", "1", "count/persistentvolumeclaims", "1",
		"requests.storage", "2", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1",
		"gold.storageclass.storage.k8s.io/requests.storage", "2"))
	claim.Spec.Resources.Requests = list("storage", "1Gi")
	claim.Status.AllocatedResources = list("storage", "2Gi")
	if got := ClaimUsage(claim)[corev1.ResourceRequestsStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("a claim allocated more than it asks is charged %v, want 2Gi", got.String())
	}
	e := &claimEvaluator{}
	got := e.MatchingResources([]corev1.ResourceName{"requests.storage", "gold.storageclass.storage.k8s.io/requests.storage", "pods", "count/persistentvolumeclaims"})
	if len(got) != 3 {
		t.Errorf("MatchingResources = %v", got)
	}
}

func TestHandles(t *testing.T) {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	attrs := func(op admission.Operation, sub string, obj, old runtime.Object) admission.Attributes {
		return admission.NewAttributesRecord(obj, old, schema.GroupVersionKind{}, "ns", "p", pods, sub, op, nil, false, nil)
	}
	e := &podEvaluator{clock: clock.RealClock{}}
	plain, deadline := podWith(), podWith()
	deadline.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
	for _, tc := range []struct {
		name string
		a    admission.Attributes
		want bool
	}{
		{"create", attrs(admission.Create, "", plain, nil), true},
		{"plain update", attrs(admission.Update, "", plain, plain), false},
		{"update into Terminating", attrs(admission.Update, "", deadline, plain), true},
		{"resize", attrs(admission.Update, "resize", plain, plain), true},
		{"status", attrs(admission.Update, "status", plain, plain), false},
	} {
		if got := e.Handles(tc.a); got != tc.want {
			t.Errorf("%s: Handles = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestUsageStats counts a namespace's pods through informer listers, as the controller does.
func TestUsageStats(t *testing.T) {
	client := fake.NewClientset(
		podWith(container("a", list("cpu", "1"), nil)),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "done", Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodFailed}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "elsewhere"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}},
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	registry := generic.NewRegistry(New(generic.ListerFuncForResourceFunc(factory.ForResource), clocktesting.NewFakePassiveClock(time.Now())))
	// The listers' informers exist once asked for: ask, then start them.
	for _, r := range []string{"pods", "configmaps"} {
		if _, err := factory.ForResource(corev1.SchemeGroupVersion.WithResource(r)); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	used, err := quota.CalculateUsage("ns", nil, list("pods", "10", "count/pods", "10", "requests.cpu", "4", "configmaps", "5", "count/configmaps", "5"), registry, nil)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "used", used, list("pods", "1", "count/pods", "2", "requests.cpu", "1", "configmaps", "1", "count/configmaps", "1"))
	// A scoped quota counts only its scope's pods.
	used, err = quota.CalculateUsage("ns", []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}, list("pods", "10"), registry, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The running pod is Burstable; the failed one is BestEffort but no longer charged.
	equal(t, "BestEffort pods", used, list("pods", "0"))
}

func TestUpdateChangesUsage(t *testing.T) {
	now := time.Now()
	running, done := podWith(), podWith()
	done.Status.Phase = corev1.PodSucceeded
	pods := corev1.Resource("pods")
	if !UpdateChangesUsage(pods, running, done, now) {
		t.Error("a pod that terminates must replenish")
	}
	if UpdateChangesUsage(pods, running, running.DeepCopy(), now) {
		t.Error("an unchanged pod must not replenish")
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}
	lb := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	if !UpdateChangesUsage(corev1.Resource("services"), lb, svc, now) {
		t.Error("a service that stops being a load balancer must replenish")
	}
	if UpdateChangesUsage(corev1.Resource("configmaps"), &corev1.ConfigMap{}, &corev1.ConfigMap{}, now) {
		t.Error("configmap updates change no usage")
	}
}

package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func podAttributes(pod *corev1.Pod, op admission.Operation) admission.Attributes {
	return admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), "ns", pod.Name,
		corev1.SchemeGroupVersion.WithResource("pods"), "", op, &metav1.CreateOptions{}, false, nil)
}

func newPod(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestDefaultTolerationSeconds(t *testing.T) {
	tests := []struct {
		name string
		tols []corev1.Toleration
		want []string // keys added
	}{
		{"none", nil, []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}},
		{"tolerates everything", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, nil},
		{"tolerates not-ready", []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}, []string{corev1.TaintNodeUnreachable}},
		{"NoSchedule does not count", []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod(func(p *corev1.Pod) { p.Spec.Tolerations = tt.tols })
			p := &defaultTolerationSeconds{Handler: admission.NewHandler(admission.Create)}
			if err := p.Admit(context.Background(), podAttributes(pod, admission.Create), nil); err != nil {
				t.Fatal(err)
			}
			added := pod.Spec.Tolerations[len(tt.tols):]
			if len(added) != len(tt.want) {
				t.Fatalf("added %v, want keys %v", added, tt.want)
			}
			for i, tol := range added {
				if tol.Key != tt.want[i] || *tol.TolerationSeconds != 300 || tol.Effect != corev1.TaintEffectNoExecute {
					t.Errorf("added %+v, want %s for 300s", tol, tt.want[i])
				}
			}
		})
	}
}

func newPriority(t *testing.T, classes ...runtime.Object) *priority {
	client := fake.NewClientset(classes...)
	factory := informers.NewSharedInformerFactory(client, 0)
	p := &priority{Handler: admission.NewHandler(admission.Create, admission.Update)}
	p.SetExternalKubeInformerFactory(factory)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return p
}

func TestPriority(t *testing.T) {
	never := corev1.PreemptNever
	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: &never}
	def := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "def"}, Value: 7, GlobalDefault: true}
	tests := []struct {
		name      string
		classes   []runtime.Object
		pod       *corev1.Pod
		wantPrio  int32
		wantClass string
		wantErr   string
	}{
		{"no class, no default", nil, newPod(nil), 0, "", ""},
		{"global default", []runtime.Object{def}, newPod(nil), 7, "def", ""},
		{"named class", []runtime.Object{high, def}, newPod(func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }), 1000, "high", ""},
		{"unknown class", nil, newPod(func(p *corev1.Pod) { p.Spec.PriorityClassName = "nope" }), 0, "", "no PriorityClass with name nope was found"},
		{"priority given", []runtime.Object{high}, newPod(func(p *corev1.Pod) {
			p.Spec.PriorityClassName = "high"
			v := int32(5)
			p.Spec.Priority = &v
		}), 0, "", "the integer value of priority (5) must not be provided in pod spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPriority(t, tt.classes...)
			err := p.Admit(context.Background(), podAttributes(tt.pod, admission.Create), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *tt.pod.Spec.Priority != tt.wantPrio || tt.pod.Spec.PriorityClassName != tt.wantClass {
				t.Errorf("priority %d class %q, want %d %q", *tt.pod.Spec.Priority, tt.pod.Spec.PriorityClassName, tt.wantPrio, tt.wantClass)
			}
		})
	}

	p := newPriority(t, def)
	second := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "second"}, Value: 1, GlobalDefault: true}
	attrs := admission.NewAttributesRecord(second, nil, schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), "", "second",
		schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	if err := p.Validate(context.Background(), attrs, nil); err == nil || !strings.Contains(err.Error(), "PriorityClass def is already marked as default") {
		t.Errorf("second global default: %v", err)
	}
}

func TestServiceAccount(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}}
	p := newTestServiceAccount(t, sa)

	pod := newPod(nil)
	if err := p.Admit(context.Background(), podAttributes(pod, admission.Create), nil); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "default" || pod.Spec.DeprecatedServiceAccount != "default" {
		t.Errorf("service account %q/%q, want default", pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount)
	}
	missing := newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "nobody" })
	err := p.Admit(context.Background(), podAttributes(missing, admission.Create), nil)
	if err == nil || !strings.Contains(err.Error(), `error looking up service account ns/nobody: serviceaccount "nobody" not found`) {
		t.Errorf("missing account: %v", err)
	}
	mirror := newPod(func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorPodAnnotation: "x"} })
	if err := p.Admit(context.Background(), podAttributes(mirror, admission.Create), nil); err != nil || mirror.Spec.ServiceAccountName != "" {
		t.Errorf("mirror pod: %v, account %q", err, mirror.Spec.ServiceAccountName)
	}
}

package apiserver

import (
	"reflect"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// warningRecorder is a client's rest.WarningHandler that keeps the texts of the Warning
// headers it is given, as kubectl would print them.
type warningRecorder struct {
	mu    sync.Mutex
	texts []string
}

func (r *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.texts = append(r.texts, text)
}

// take returns the texts received since the last take.
func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	texts := r.texts
	r.texts = nil
	return texts
}

func expectWarnings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings of %s:\n got %q\nwant %q", what, got, want)
	}
}

// warnedTemplate has a deprecated node label in its node selector and a memory limit in a
// fraction of a byte: both valid, both warned of.
func warnedTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "warned"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"beta.kubernetes.io/os": "linux"},
			Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("0.5")},
			}}},
		},
	}
}

// TestPodAndTemplateWarnings: the API server answers writes of a Pod and of a Deployment
// with upstream's Warning headers, which client-go hands to its WarningHandler; a pod's
// update warns of nothing, a Deployment's only when it changed the spec.
func TestPodAndTemplateWarnings(t *testing.T) {
	// No workload controller: the test's updates of the Deployment race no one.
	c := quietCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	recorder := &warningRecorder{}
	config := rest.CopyConfig(c.Config)
	config.WarningHandler = recorder
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}

	template := warnedTemplate()
	pod, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "warned.pod"}, Spec: template.Spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the pod: %v", err)
	}
	// The pod's requests are defaulted from its limits before the warnings are computed.
	expectWarnings(t, "the pod's create", recorder.take(), []string{
		`metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]`,
		`spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`,
		`spec.containers[0].resources.limits[memory]: fractional byte value "500m" is invalid, must be an integer`,
		`spec.containers[0].resources.requests[memory]: fractional byte value "500m" is invalid, must be an integer`,
	})
	pod.Labels = map[string]string{"relabelled": "yes"}
	if _, err := client.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating the pod: %v", err)
	}
	expectWarnings(t, "the pod's update", recorder.take(), nil)

	d, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "warned"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "warned"}},
			Template: template,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the deployment: %v", err)
	}
	templateWarnings := []string{
		`spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`,
		`spec.template.spec.containers[0].resources.limits[memory]: fractional byte value "500m" is invalid, must be an integer`,
	}
	expectWarnings(t, "the deployment's create", recorder.take(), templateWarnings)

	d.Labels = map[string]string{"relabelled": "yes"}
	if d, err = client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("relabelling the deployment: %v", err)
	}
	expectWarnings(t, "an update of the deployment's labels", recorder.take(), nil)

	d.Spec.Replicas = ptr.To[int32](2)
	if _, err := client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scaling the deployment: %v", err)
	}
	expectWarnings(t, "an update of the deployment's spec", recorder.take(), templateWarnings)
}

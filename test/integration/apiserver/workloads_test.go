package apiserver

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// The workload controllers on the real API server, with the manager's other controllers (the
// garbage collector among them) beside them. No node runs here: a test that needs ready pods
// writes their status itself, as a node agent would.

func webTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "busybox:1.36"}}},
	}
}

// podsOf lists the pods labelled app=app that are not being deleted.
func podsOf(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, app string) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

// waitPods waits until exactly n live pods of app exist.
func waitPods(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, app string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods = podsOf(t, ctx, client, ns, app)
		return len(pods) == n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d pods of %s: %d exist", n, app, len(pods))
	}
	return pods
}

// TestReplicaSetController: a ReplicaSet makes its pods, owned by it; a deleted pod is
// replaced; scaling down deletes pods; deleting the ReplicaSet deletes its pods (garbage
// collector, background propagation).
func TestReplicaSetController(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	rs, err := c.Client.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rs"}},
			Template: webTemplate("rs"),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ctx, c.Client, ns, "rs", 3)
	for _, p := range pods {
		ref := metav1.GetControllerOf(&p)
		if ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
			t.Errorf("pod %s's controller: %+v", p.Name, ref)
		}
	}
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, pods[0].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ctx, c.Client, ns, "rs", 3)
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := c.Client.AppsV1().ReplicaSets(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.Replicas == 3 && got.Status.ObservedGeneration == got.Generation, err
	})
	if err != nil {
		t.Fatalf("the ReplicaSet's status: %v", err)
	}

	// The controller may still be writing the status (readyReplicas): a conflict is retried,
	// as a client does.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		scale, err := c.Client.AppsV1().ReplicaSets(ns).GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		scale.Spec.Replicas = 1
		_, err = c.Client.AppsV1().ReplicaSets(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitPods(t, ctx, c.Client, ns, "rs", 1)

	if err := c.Client.AppsV1().ReplicaSets(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ctx, c.Client, ns, "rs", 0)
}

// TestReplicationControllerOrphans: a ReplicationController adopts a matching orphan pod,
// and deleting it with orphan propagation leaves its pods without the owner reference.
func TestReplicationControllerOrphans(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	orphan := simplePod("orphan")
	orphan.Labels = map[string]string{"app": "rc"}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	template := webTemplate("rc")
	rc, err := c.Client.CoreV1().ReplicationControllers(ns).Create(ctx, &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2), Selector: map[string]string{"app": "rc"}, Template: &template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "orphan", metav1.GetOptions{})
		ref := metav1.GetControllerOf(p)
		return err == nil && ref != nil && ref.UID == rc.UID, err
	})
	if err != nil {
		t.Fatalf("the orphan was not adopted: %v", err)
	}
	waitPods(t, ctx, c.Client, ns, "rc", 2)

	if err := c.Client.CoreV1().ReplicationControllers(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods := podsOf(t, ctx, c.Client, ns, "rc")
		for _, p := range pods {
			if len(p.OwnerReferences) != 0 {
				return false, nil
			}
		}
		_, err := c.Client.CoreV1().ReplicationControllers(ns).Get(ctx, "web", metav1.GetOptions{})
		return len(pods) == 2 && err != nil, nil
	})
	if err != nil {
		t.Fatalf("orphaning the pods: %v", err)
	}
}

// markReady writes, as a node agent would, Running and Ready into every live pod of app that
// is not yet.
func markReady(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, app string) {
	t.Helper()
	for _, p := range podsOf(t, ctx, client, ns, app) {
		if p.Status.Phase == corev1.PodRunning {
			continue
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.StartTime = &now
		p.Status.Conditions = append(p.Status.Conditions,
			corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
		if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			t.Fatalf("marking %s ready: %v", p.Name, err)
		}
	}
}

// waitRolledOut marks pods ready until the Deployment says what `kubectl rollout status`
// waits for: observed, every replica updated and available, none old left.
func waitRolledOut(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, name, app string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 40*time.Second, true, func(ctx context.Context) (bool, error) {
		markReady(t, ctx, client, ns, app)
		var err error
		d, err = client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		s := d.Status
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for deployment %s to roll out: %v (status %+v)", name, err, d.Status)
	}
	return d
}

// TestDeploymentController: a Deployment makes a ReplicaSet named by its template hash; a
// new image rolls to a second ReplicaSet and scales the first to 0; the conditions say
// NewReplicaSetAvailable and MinimumReplicasAvailable; foreground deletion takes the
// ReplicaSets and pods before the Deployment.
func TestDeploymentController(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	_, err := c.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "deploy"}},
			Template: webTemplate("deploy"),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := waitRolledOut(t, ctx, c.Client, ns, "web", "deploy")
	if d.Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Errorf("revision after create: %q", d.Annotations["deployment.kubernetes.io/revision"])
	}

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
		_, err = c.Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d = waitRolledOut(t, ctx, c.Client, ns, "web", "deploy")
	reasons := map[appsv1.DeploymentConditionType]string{}
	for _, cond := range d.Status.Conditions {
		reasons[cond.Type] = cond.Reason
	}
	if reasons[appsv1.DeploymentProgressing] != "NewReplicaSetAvailable" || reasons[appsv1.DeploymentAvailable] != "MinimumReplicasAvailable" {
		t.Errorf("conditions after the rollout: %v", reasons)
	}
	sets, err := c.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets.Items) != 2 {
		t.Fatalf("%d ReplicaSets after one rollout, want 2", len(sets.Items))
	}
	for _, rs := range sets.Items {
		hash := rs.Labels["pod-template-hash"]
		if hash == "" || rs.Name != "web-"+hash {
			t.Errorf("ReplicaSet %s has pod-template-hash %q", rs.Name, hash)
		}
		image := rs.Spec.Template.Spec.Containers[0].Image
		if want := map[string]int32{"busybox:1.36": 0, "busybox:1.37": 2}[image]; ptr.Deref(rs.Spec.Replicas, -1) != want {
			t.Errorf("ReplicaSet %s (%s) has %d replicas, want %d", rs.Name, image, ptr.Deref(rs.Spec.Replicas, -1), want)
		}
	}

	if err := c.Client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("the Deployment's foreground deletion: %v", err)
	}
	sets, err = c.Client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sets.Items); n != 0 || len(podsOf(t, ctx, c.Client, ns, "deploy")) != 0 {
		t.Errorf("after the foreground deletion: %d ReplicaSets, pods %v", n, podsOf(t, ctx, c.Client, ns, "deploy"))
	}
}

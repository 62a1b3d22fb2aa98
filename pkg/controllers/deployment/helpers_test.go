package deployment

import (
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// t0 is the tests' epoch: the fake clock starts here.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newDeployment is a Deployment as the API server stores it (defaults applied): rolling
// update with maxSurge and maxUnavailable (ints; nil for the 25% defaults), selector and
// template labels app=<name>.
func newDeployment(name string, replicas int32, surge, unavailable *intstr.IntOrString) *appsv1.Deployment {
	if surge == nil {
		surge = ptr.To(intstr.FromString("25%"))
	}
	if unavailable == nil {
		unavailable = ptr.To(intstr.FromString("25%"))
	}
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 1,
			Annotations: map[string]string{},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: surge, MaxUnavailable: unavailable},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
			},
			RevisionHistoryLimit:    ptr.To[int32](10),
			ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}
}

// ints is an int maxSurge or maxUnavailable.
func ints(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }

// noDeadline is d without a progress deadline.
func noDeadline(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](math.MaxInt32)
	return d
}

// newRS is a ReplicaSet of replicas, all of them existing and available, created at created.
func newRS(name string, replicas int32, created time.Time) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(created), Annotations: map[string]string{},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)},
		Status: appsv1.ReplicaSetStatus{
			Replicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
		},
	}
}

// withRevision sets rs's revision annotation.
func withRevision(rs *appsv1.ReplicaSet, rev string) *appsv1.ReplicaSet {
	rs.Annotations[RevisionAnnotation] = rev
	return rs
}

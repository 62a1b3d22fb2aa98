package evaluator

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// UpdateChangesUsage reports whether an update of an object of gr from old to cur, at now,
// may change the quota it uses, so that its namespace's quotas must be recounted: a pod that
// terminates, leaves or enters the Terminating scope, or whose allocated resources change; a
// service whose type changes between ClusterIP-like, NodePort and LoadBalancer; a claim
// whose allocation or VolumeAttributesClasses change. Deletions always do; other updates
// wait for the next full recount.
func UpdateChangesUsage(gr schema.GroupResource, old, cur any, now time.Time) bool {
	switch gr {
	case corev1.Resource("pods"):
		o, ok1 := old.(*corev1.Pod)
		c, ok2 := cur.(*corev1.Pod)
		if !ok1 || !ok2 {
			return false
		}
		return statusResourcesChanged(o, c) || IsTerminating(o) != IsTerminating(c) ||
			(Charged(o, now) && !Charged(c, now))
	case corev1.Resource("services"):
		o, ok1 := old.(*corev1.Service)
		c, ok2 := cur.(*corev1.Service)
		return ok1 && ok2 && QuotaServiceType(o) != QuotaServiceType(c)
	case corev1.Resource("persistentvolumeclaims"):
		o, ok1 := old.(*corev1.PersistentVolumeClaim)
		c, ok2 := cur.(*corev1.PersistentVolumeClaim)
		return ok1 && ok2 && ClaimNeedsReplenish(c, o)
	}
	return false
}

// statusResourcesChanged reports whether a container's allocated resources in the status
// changed (an in-place resize that the node carried out).
func statusResourcesChanged(old, cur *corev1.Pod) bool {
	for _, lists := range [][2][]corev1.ContainerStatus{
		{old.Status.ContainerStatuses, cur.Status.ContainerStatuses},
		{old.Status.InitContainerStatuses, cur.Status.InitContainerStatuses},
	} {
		for _, o := range lists[0] {
			for _, c := range lists[1] {
				if c.Name == o.Name && !apiequality.Semantic.DeepEqual(o.Resources, c.Resources) {
					return true
				}
			}
		}
	}
	return false
}

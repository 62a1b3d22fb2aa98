package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// kind is what the one reconcile needs of the kind it runs: ReplicaSets, or
// ReplicationControllers seen as ReplicaSets. A ReplicationController converts to an apps/v1
// ReplicaSet without loss (its map selector becomes matchLabels, its status the same fields
// but terminatingReplicas), so the reconcile is written once against *appsv1.ReplicaSet and
// the kind converts at its edges: what it reads from the cache, what it writes, and what the
// events are on.
type kind interface {
	// gvk is the kind of the owner references the controller writes and follows.
	gvk() schema.GroupVersionKind
	// asReplicaSet converts an object from the kind's informer; false if it is of another type.
	asReplicaSet(obj any) (*appsv1.ReplicaSet, bool)
	// get reads one from the cache.
	get(namespace, name string) (*appsv1.ReplicaSet, error)
	// selecting lists, from the cache, those whose selector matches pod's labels.
	selecting(pod *corev1.Pod) []*appsv1.ReplicaSet
	// controlledBy lists, from the cache, those in namespace whose controller has uid (the
	// ReplicaSets of one Deployment).
	controlledBy(namespace string, uid string) []*appsv1.ReplicaSet
	// getLive reads one from the API server, uncached.
	getLive(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	// updateStatus writes rs's status.
	updateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	// original is rs as the kind's own object: what events are on.
	original(rs *appsv1.ReplicaSet) runtime.Object
	// terminatingReplicas reports whether the kind's status has terminatingReplicas
	// (ReplicationControllers' has not).
	terminatingReplicas() bool
}

// replicaSets is the kind of the ReplicaSet controller.
type replicaSets struct {
	client kubernetes.Interface
	lister appslisters.ReplicaSetLister
}

func (replicaSets) gvk() schema.GroupVersionKind {
	return appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
}

func (replicaSets) asReplicaSet(obj any) (*appsv1.ReplicaSet, bool) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	return rs, ok
}

func (k replicaSets) get(namespace, name string) (*appsv1.ReplicaSet, error) {
	return k.lister.ReplicaSets(namespace).Get(name)
}

func (k replicaSets) selecting(pod *corev1.Pod) []*appsv1.ReplicaSet {
	rss, err := k.lister.GetPodReplicaSets(pod)
	if err != nil {
		return nil // none selects it
	}
	return rss
}

func (k replicaSets) controlledBy(namespace, uid string) []*appsv1.ReplicaSet {
	all, err := k.lister.ReplicaSets(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.ReplicaSet
	for _, rs := range all {
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && string(ref.UID) == uid {
			out = append(out, rs)
		}
	}
	return out
}

func (k replicaSets) getLive(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	return k.client.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (k replicaSets) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	return k.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
}

func (replicaSets) original(rs *appsv1.ReplicaSet) runtime.Object { return rs }
func (replicaSets) terminatingReplicas() bool                     { return true }

// replicationControllers is the kind of the replication manager.
type replicationControllers struct {
	client kubernetes.Interface
	lister corelisters.ReplicationControllerLister
}

func (replicationControllers) gvk() schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind("ReplicationController")
}

func (replicationControllers) asReplicaSet(obj any) (*appsv1.ReplicaSet, bool) {
	rc, ok := obj.(*corev1.ReplicationController)
	if !ok {
		return nil, false
	}
	return rcToRS(rc), true
}

func (k replicationControllers) get(namespace, name string) (*appsv1.ReplicaSet, error) {
	rc, err := k.lister.ReplicationControllers(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	return rcToRS(rc), nil
}

func (k replicationControllers) selecting(pod *corev1.Pod) []*appsv1.ReplicaSet {
	rcs, err := k.lister.GetPodControllers(pod)
	if err != nil {
		return nil
	}
	return rcsToRSs(rcs)
}

func (k replicationControllers) controlledBy(namespace, uid string) []*appsv1.ReplicaSet {
	all, err := k.lister.ReplicationControllers(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*corev1.ReplicationController
	for _, rc := range all {
		if ref := metav1.GetControllerOfNoCopy(rc); ref != nil && string(ref.UID) == uid {
			out = append(out, rc)
		}
	}
	return rcsToRSs(out)
}

func (k replicationControllers) getLive(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error) {
	rc, err := k.client.CoreV1().ReplicationControllers(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return rcToRS(rc), nil
}

func (k replicationControllers) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	rc, err := k.client.CoreV1().ReplicationControllers(rs.Namespace).UpdateStatus(ctx, rsToRC(rs), metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return rcToRS(rc), nil
}

func (replicationControllers) original(rs *appsv1.ReplicaSet) runtime.Object { return rsToRC(rs) }
func (replicationControllers) terminatingReplicas() bool                     { return false }

func rcsToRSs(rcs []*corev1.ReplicationController) []*appsv1.ReplicaSet {
	out := make([]*appsv1.ReplicaSet, 0, len(rcs))
	for _, rc := range rcs {
		out = append(out, rcToRS(rc))
	}
	return out
}

// rcToRS is rc as a ReplicaSet, sharing nothing with it (the cache's objects are read-only).
// A nil selector stays nil, which selects nothing: the API server defaults an RC's selector
// to its template's labels, so only a broken object has none.
func rcToRS(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rc = rc.DeepCopy()
	rs := &appsv1.ReplicaSet{
		ObjectMeta: rc.ObjectMeta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Replicas == nil {
		one := int32(1) // the API server's default
		rs.Spec.Replicas = &one
	}
	if rc.Spec.Selector != nil {
		rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// rsToRC is the way back of rcToRS.
func rsToRC(rs *appsv1.ReplicaSet) *corev1.ReplicationController {
	rs = rs.DeepCopy()
	rc := &corev1.ReplicationController{
		ObjectMeta: rs.ObjectMeta,
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        rs.Spec.Replicas,
			MinReadySeconds: rs.Spec.MinReadySeconds,
			Template:        &rs.Spec.Template,
		},
		Status: corev1.ReplicationControllerStatus{
			Replicas:             rs.Status.Replicas,
			FullyLabeledReplicas: rs.Status.FullyLabeledReplicas,
			ReadyReplicas:        rs.Status.ReadyReplicas,
			AvailableReplicas:    rs.Status.AvailableReplicas,
			ObservedGeneration:   rs.Status.ObservedGeneration,
		},
	}
	if rs.Spec.Selector != nil {
		rc.Spec.Selector = rs.Spec.Selector.MatchLabels
	}
	for _, c := range rs.Status.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rc
}

// keyOf is an owner's queue and expectations key, "namespace/name" as
// cache.MetaNamespaceKeyFunc makes it.
func keyOf(rs *appsv1.ReplicaSet) string { return rs.Namespace + "/" + rs.Name }

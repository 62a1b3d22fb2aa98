package node

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Informers are the shared informers the graph follows. Pods is required; the others are
// nil while the API server does not serve their resource.
type Informers struct {
	Pods              cache.SharedIndexInformer
	PersistentVolumes cache.SharedIndexInformer
	VolumeAttachments cache.SharedIndexInformer
}

// AddGraphEventHandlers keeps g current from the informers' events. It returns what reports
// that the handlers have seen the informers' initial lists.
func AddGraphEventHandlers(g *Graph, inf Informers) ([]cache.InformerSynced, error) {
	var synced []cache.InformerSynced
	add := func(i cache.SharedIndexInformer, h cache.ResourceEventHandlerFuncs) error {
		if i == nil {
			return nil
		}
		reg, err := i.AddEventHandler(h)
		if err != nil {
			return err
		}
		synced = append(synced, reg.HasSynced)
		return nil
	}
	if err := add(inf.Pods, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { updatePod(g, nil, obj) },
		UpdateFunc: func(old, obj any) { updatePod(g, old, obj) },
		DeleteFunc: func(obj any) {
			if pod, ok := unwrap(obj).(*corev1.Pod); ok && pod.Spec.NodeName != "" {
				g.DeletePod(pod.Namespace, pod.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	if err := add(inf.PersistentVolumes, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { addPV(g, obj) },
		UpdateFunc: func(_, obj any) { addPV(g, obj) },
		DeleteFunc: func(obj any) {
			if pv, ok := unwrap(obj).(*corev1.PersistentVolume); ok {
				g.DeletePV(pv.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	if err := add(inf.VolumeAttachments, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { setAttachment(g, obj, false) },
		UpdateFunc: func(_, obj any) { setAttachment(g, obj, false) },
		DeleteFunc: func(obj any) { setAttachment(g, unwrap(obj), true) },
	}); err != nil {
		return nil, err
	}
	return synced, nil
}

// updatePod adds a bound pod, unless nothing the graph keeps of it changed: a pod's node, its
// spec's references and its UID are immutable once bound, except for ephemeral containers
// added later and the resource claims its status names. Status writes, the commonest update,
// so cost nothing.
func updatePod(g *Graph, oldObj, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	if old, ok := oldObj.(*corev1.Pod); ok && old.Spec.NodeName == pod.Spec.NodeName && old.UID == pod.UID &&
		len(pod.Spec.EphemeralContainers) <= len(old.Spec.EphemeralContainers) &&
		claimStatusesEqual(old.Status.ResourceClaimStatuses, pod.Status.ResourceClaimStatuses) &&
		equality.Semantic.DeepEqual(old.Status.ExtendedResourceClaimStatus, pod.Status.ExtendedResourceClaimStatus) {
		return
	}
	klog.V(4).InfoS("Node authorizer graph: pod", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
	g.AddPod(pod)
}

func claimStatusesEqual(a, b []corev1.PodResourceClaimStatus) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.PodResourceClaimStatus) bool {
		return x.Name == y.Name && (x.ResourceClaimName == nil) == (y.ResourceClaimName == nil) &&
			(x.ResourceClaimName == nil || *x.ResourceClaimName == *y.ResourceClaimName)
	})
}

func addPV(g *Graph, obj any) {
	if pv, ok := obj.(*corev1.PersistentVolume); ok {
		g.AddPV(pv)
	}
}

func setAttachment(g *Graph, obj any, deleted bool) {
	va, ok := obj.(*storagev1.VolumeAttachment)
	if !ok {
		return
	}
	node := va.Spec.NodeName
	if deleted {
		node = ""
	}
	g.setNodeOf(volumeAttachmentKind, "", va.Name, node)
}

// unwrap returns the object of a tombstone.
func unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// Package controllerref is how a workload controller decides which objects are its own: the
// step before it counts its pods (or ReplicaSets, or ControllerRevisions). An object belongs
// to the controller its controller owner reference (controller: true) names. A controller
// claims the objects its selector matches: it adopts matching orphans by adding itself as
// their controller, releases those it owns that no longer match by removing its reference,
// and leaves objects owned by another controller alone. This is upstream's
// BaseControllerRefManager.ClaimObject and its patches (pkg/controller/controller_ref_manager.go),
// written once for any object type.
package controllerref

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
)

// Owner is the controller claiming objects.
type Owner struct {
	// Object is the controller object (a ReplicaSet, a Job, ...).
	Object metav1.Object
	// Kind is its kind, e.g. appsv1.SchemeGroupVersion.WithKind("ReplicaSet").
	Kind schema.GroupVersionKind
	// Selector picks the objects it should own.
	Selector labels.Selector
	// CanAdopt is called once before the first adoption of a Claim; it should re-get the
	// owner uncached and fail if it is being deleted or its UID changed
	// (RecheckDeletionTimestamp), since a cached owner may already be gone and adopting for
	// it would leave orphans to the garbage collector. Nil allows adoption.
	CanAdopt func(ctx context.Context) error
	// Match, when set, must also hold for an object to be claimed (a filter beyond the
	// selector, as upstream's ClaimPods filters).
	Match func(obj metav1.Object) bool
	// Finalizers are added to an object on adoption and removed on release (the Job
	// controller's batch.kubernetes.io/job-tracking).
	Finalizers []string
}

// NewRef returns the controller owner reference to owner of kind, with blockOwnerDeletion so
// that the garbage collector's foreground deletion waits for the dependant.
func NewRef(owner metav1.Object, kind schema.GroupVersionKind) *metav1.OwnerReference {
	return metav1.NewControllerRef(owner, kind)
}

// Claim returns those of objs that o controls once the following is done: matching orphans
// are adopted and owned objects that no longer match are released, each through patch with
// the AdoptPatch or ReleasePatch text. Objects another controller owns are skipped; so are
// orphans being deleted or in another namespace, and every adoption and release while o is
// being deleted (it still claims what it owns and matches, which takes no write). An object
// gone (NotFound) is dropped silently; the other failures are aggregated into the error, for
// the caller to retry its sync.
func Claim[T metav1.Object](ctx context.Context, o Owner, objs []T, patch func(ctx context.Context, obj T, data []byte) error) ([]T, error) {
	var (
		claimed []T
		errs    []error
	)
	canAdopt := sync.OnceValue(func() error {
		if o.CanAdopt == nil {
			return nil
		}
		return o.CanAdopt(ctx)
	})
	for _, obj := range objs {
		ok, err := claimOne(ctx, o, obj, canAdopt, patch)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, obj)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

// claimOne is upstream's ClaimObject: whether o now owns obj, after adopting or releasing it.
func claimOne[T metav1.Object](ctx context.Context, o Owner, obj T, canAdopt func() error, patch func(context.Context, T, []byte) error) (bool, error) {
	match := o.Selector.Matches(labels.Set(obj.GetLabels())) && (o.Match == nil || o.Match(obj))
	deleting := o.Object.GetDeletionTimestamp() != nil
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		switch {
		case ref.UID != o.Object.GetUID():
			return false, nil // another controller's
		case match:
			return true, nil
		case deleting:
			return false, nil
		}
		klog.FromContext(ctx).V(2).Info("Patching object to remove its controllerRef", "object", klog.KObj(obj),
			"kind", kindOf(obj), "gvk", o.Kind, "controller", o.Object.GetName())
		if err := patch(ctx, obj, ReleasePatch(o, obj)); err != nil {
			// Gone, or Invalid: it has no owner references left, or its UID changed (it was
			// deleted and recreated); either way it is no longer ours.
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				return false, nil
			}
			return false, fmt.Errorf("releasing %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
		}
		return false, nil
	}

	// An orphan.
	if deleting || !match || obj.GetDeletionTimestamp() != nil {
		return false, nil
	}
	if ns := o.Object.GetNamespace(); ns != "" && ns != obj.GetNamespace() {
		return false, nil
	}
	if err := canAdopt(); err != nil {
		return false, fmt.Errorf("can't adopt %s %v/%v (%v): %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), obj.GetUID(), err)
	}
	if err := patch(ctx, obj, AdoptPatch(o, obj)); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		// Someone else may have claimed it first; the sync is retried and sees.
		return false, fmt.Errorf("adopting %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
	}
	return true, nil
}

// ClaimPods is Claim for pods, patching through pc.
func ClaimPods(ctx context.Context, o Owner, pods []*corev1.Pod, pc podcontrol.Interface) ([]*corev1.Pod, error) {
	return Claim(ctx, o, pods, func(ctx context.Context, pod *corev1.Pod, data []byte) error {
		return pc.PatchPod(ctx, pod.Namespace, pod.Name, data)
	})
}

// RecheckDeletionTimestamp returns a CanAdopt that gets the owner with get (uncached) and
// fails if it could not, or if the owner is being deleted. get itself should fail when the
// UID it got is not the cached owner's (the owner was deleted and recreated under its name).
func RecheckDeletionTimestamp(get func(ctx context.Context) (metav1.Object, error)) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		obj, err := get(ctx)
		if err != nil {
			return fmt.Errorf("can't recheck DeletionTimestamp: %w", err)
		}
		if ts := obj.GetDeletionTimestamp(); ts != nil {
			return fmt.Errorf("%v/%v has just been deleted at %v", obj.GetNamespace(), obj.GetName(), ts)
		}
		return nil
	}
}

// adoptPatch is the shape of upstream's ownerRefControllerPatch.
type adoptPatch struct {
	Metadata struct {
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		UID             types.UID               `json:"uid"`
		Finalizers      []string                `json:"finalizers,omitempty"`
	} `json:"metadata"`
}

// AdoptPatch is the strategic merge patch making o the controller of obj: o's controller
// reference merged into obj's owner references (by UID), o's finalizers added, and obj's UID
// as a precondition (a patch of a recreated object of the same name fails as Invalid). The
// API server refuses it if obj already has another controller.
func AdoptPatch(o Owner, obj metav1.Object) []byte {
	var p adoptPatch
	p.Metadata.OwnerReferences = []metav1.OwnerReference{*NewRef(o.Object, o.Kind)}
	p.Metadata.UID = obj.GetUID()
	p.Metadata.Finalizers = o.Finalizers
	return mustMarshal(p)
}

// releasePatch is the shape of upstream's GenerateDeleteOwnerRefStrategicMergeBytes.
type releasePatch struct {
	Metadata struct {
		UID              types.UID           `json:"uid"`
		OwnerReferences  []map[string]string `json:"ownerReferences"`
		DeleteFinalizers []string            `json:"$deleteFromPrimitiveList/finalizers,omitempty"`
	} `json:"metadata"`
}

// ReleasePatch is the strategic merge patch removing o's owner reference from obj (and o's
// finalizers), with obj's UID as a precondition.
func ReleasePatch(o Owner, obj metav1.Object) []byte {
	var p releasePatch
	p.Metadata.UID = obj.GetUID()
	p.Metadata.OwnerReferences = []map[string]string{{"$patch": "delete", "uid": string(o.Object.GetUID())}}
	p.Metadata.DeleteFinalizers = o.Finalizers
	return mustMarshal(p)
}

// mustMarshal marshals the patch structs above, which cannot fail to marshal.
func mustMarshal(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshalling an owner reference patch: %v", err))
	}
	return data
}

// kindOf names obj's Go type ("Pod", "ReplicaSet") for messages: objects from listers carry
// no TypeMeta.
func kindOf(obj any) string {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

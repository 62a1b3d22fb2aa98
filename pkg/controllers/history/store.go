package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
)

// ControllerIndex is the name of the revision informer's index by controller: its keys are
// "<namespace>/<kind>/<name>/<uid>" of a revision's controller, or "<namespace>" for an
// orphan, so that a controller lists its own revisions and the orphans without reading every
// revision of the namespace.
const ControllerIndex = "controllerRevisionController"

// controllerIndexKey is the ControllerIndex key of a revision in namespace controlled by ref
// (nil: an orphan).
func controllerIndexKey(namespace string, ref *metav1.OwnerReference) string {
	if ref == nil {
		return namespace
	}
	return namespace + "/" + ref.Kind + "/" + ref.Name + "/" + string(ref.UID)
}

// History reads a controller's revisions from the shared revision informer and writes them
// through the client.
type History struct {
	client  kubernetes.Interface
	indexer cache.Indexer
}

// NewHistory returns the History of revisions cached by informer, adding its ControllerIndex
// (once, however many controllers share the informer). Call it before the informer starts:
// an informer already started takes no index, and List then reads the whole namespace.
func NewHistory(client kubernetes.Interface, informer appsinformers.ControllerRevisionInformer) *History {
	inf := informer.Informer()
	if _, ok := inf.GetIndexer().GetIndexers()[ControllerIndex]; !ok {
		err := inf.AddIndexers(cache.Indexers{ControllerIndex: func(obj any) ([]string, error) {
			cr, ok := obj.(*appsv1.ControllerRevision)
			if !ok {
				return nil, nil
			}
			return []string{controllerIndexKey(cr.Namespace, metav1.GetControllerOfNoCopy(cr))}, nil
		}})
		// Another controller may have added it in between.
		if _, ok := inf.GetIndexer().GetIndexers()[ControllerIndex]; err != nil && !ok {
			utilruntime.HandleError(fmt.Errorf("adding the ControllerRevision index by controller: %w", err))
		}
	}
	return &History{client: client, indexer: inf.GetIndexer()}
}

// List returns the cached revisions in parent's namespace that selector matches and that
// parent (of kind) controls or nobody does: those it may claim.
func (h *History) List(parent metav1.Object, kind schema.GroupVersionKind, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	ns := parent.GetNamespace()
	var objs []any
	if _, indexed := h.indexer.GetIndexers()[ControllerIndex]; indexed {
		for _, key := range []string{controllerIndexKey(ns, metav1.NewControllerRef(parent, kind)), controllerIndexKey(ns, nil)} {
			found, err := h.indexer.ByIndex(ControllerIndex, key)
			if err != nil {
				return nil, fmt.Errorf("listing the ControllerRevisions of %s/%s: %w", ns, parent.GetName(), err)
			}
			objs = append(objs, found...)
		}
	} else {
		found, err := h.indexer.ByIndex(cache.NamespaceIndex, ns)
		if err != nil {
			return nil, fmt.Errorf("listing the ControllerRevisions of %s/%s: %w", ns, parent.GetName(), err)
		}
		objs = found
	}
	var out []*appsv1.ControllerRevision
	for _, obj := range objs {
		cr, ok := obj.(*appsv1.ControllerRevision)
		if !ok || !selector.Matches(labels.Set(cr.Labels)) {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(cr); ref == nil || ref.UID == parent.GetUID() {
			out = append(out, cr)
		}
	}
	return out, nil
}

// Claim claims revisions (from List) for owner through controllerref.Claim: matching
// orphans are adopted and owned revisions owner.Selector no longer matches released. A
// caller that lists with its selector only adopts, as upstream's StatefulSet controller.
func (h *History) Claim(ctx context.Context, owner controllerref.Owner, revisions []*appsv1.ControllerRevision) ([]*appsv1.ControllerRevision, error) {
	return controllerref.Claim(ctx, owner, revisions, func(ctx context.Context, cr *appsv1.ControllerRevision, data []byte) error {
		_, err := h.client.AppsV1().ControllerRevisions(cr.Namespace).Patch(ctx, cr.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
		return err
	})
}

// Create stores revision for parent under the name its data hashes to with *collisionCount.
// A revision of that name holding the same data is returned as the one created; one holding
// other data is a hash collision: *collisionCount is raised and the next name tried, as
// upstream, so the caller must persist the count in its status.
func (h *History) Create(ctx context.Context, parent metav1.Object, revision *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, errors.New("collisionCount should not be nil")
	}
	ns := parent.GetNamespace()
	client := h.client.AppsV1().ControllerRevisions(ns)
	clone := revision.DeepCopy()
	clone.Namespace = ns
	for {
		hash := Hash(revision, collisionCount)
		clone.Name = Name(parent.GetName(), hash)
		created, err := client.Create(ctx, clone, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return nil, fmt.Errorf("creating ControllerRevision %s/%s: %w", ns, clone.Name, err)
			}
			return created, nil
		}
		exists, err := client.Get(ctx, clone.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("getting ControllerRevision %s/%s after a name collision: %w", ns, clone.Name, err)
		}
		if bytes.Equal(exists.Data.Raw, clone.Data.Raw) {
			return exists, nil
		}
		*collisionCount++
	}
}

// Renumber gives revision the number revision (a rollback to an old template makes it the
// newest again), retrying conflicts on a fresh copy.
func (h *History) Renumber(ctx context.Context, revision *appsv1.ControllerRevision, number int64) (*appsv1.ControllerRevision, error) {
	clone := revision.DeepCopy()
	client := h.client.AppsV1().ControllerRevisions(clone.Namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if clone.Revision == number {
			return nil
		}
		clone.Revision = number
		updated, err := client.Update(ctx, clone, metav1.UpdateOptions{})
		if err == nil {
			clone = updated
			return nil
		}
		if fresh, getErr := client.Get(ctx, clone.Name, metav1.GetOptions{}); getErr == nil {
			clone = fresh
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("renumbering ControllerRevision %s/%s to %d: %w", revision.Namespace, revision.Name, number, err)
	}
	return clone, nil
}

// Delete deletes revision; one already gone is no error.
func (h *History) Delete(ctx context.Context, revision *appsv1.ControllerRevision) error {
	err := h.client.AppsV1().ControllerRevisions(revision.Namespace).Delete(ctx, revision.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ControllerRevision %s/%s: %w", revision.Namespace, revision.Name, err)
	}
	return nil
}

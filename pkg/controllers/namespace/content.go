package namespace

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
)

// podsResource is emptied before anything else, as Kubernetes does: a pod that is still
// stopping may need the namespace's secrets, configmaps and service account until it is gone.
var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// finalizerEstimate is how long to wait for objects held only by finalizers: their owners
// give no hint of when they will be done.
const finalizerEstimate = 15 * time.Second

// resource is one namespaced resource to empty, with the verbs discovery says it supports.
type resource struct {
	gvr              schema.GroupVersionResource
	deleteCollection bool
	list             bool
}

// deletableResources turns discovery's answer into the resources to empty: the namespaced
// ones that support delete, pods first, the rest in a stable order. A group version that does
// not parse is skipped and reported, so the others are still emptied.
func deletableResources(lists []*metav1.APIResourceList) ([]resource, error) {
	var out []resource
	var errs []error
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range list.APIResources {
			// Subresources go away with their object.
			if !r.Namespaced || strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			out = append(out, resource{
				gvr:              gv.WithResource(r.Name),
				deleteCollection: slices.Contains(r.Verbs, "deletecollection"),
				list:             slices.Contains(r.Verbs, "list"),
			})
		}
	}
	slices.SortFunc(out, func(a, b resource) int {
		if ap, bp := a.gvr == podsResource, b.gvr == podsResource; ap != bp {
			if ap {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.gvr.Group, b.gvr.Group), cmp.Compare(a.gvr.Resource, b.gvr.Resource),
			cmp.Compare(a.gvr.Version, b.gvr.Version))
	})
	return out, utilerrors.NewAggregate(errs)
}

// deleteAllContent makes one pass over a terminating namespace: discover its resources,
// delete all their objects and count what is left. While pods remain nothing else is touched.
func (c *Controller) deleteAllContent(ctx context.Context, ns *corev1.Namespace) deletionReport {
	logger := klog.FromContext(ctx)
	report := deletionReport{
		remaining:  map[schema.GroupVersionResource]int{},
		finalizers: map[string]int{},
	}

	// A partial answer still names resources that can be emptied now; the error is kept so
	// that the namespace is not finalized while content may hide in the missing groups.
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil {
		report.discoveryErr = err
	}
	resources, err := deletableResources(lists)
	if err != nil {
		report.groupVersionErr = err
	}

	for _, r := range resources {
		left, err := c.emptyResource(ctx, ns.Name, r)
		if err != nil {
			report.contentErrs = append(report.contentErrs, err)
		}
		if left.count > 0 {
			report.remaining[r.gvr] += left.count
		}
		for f, n := range left.finalizers {
			report.finalizers[f] += n
		}
		report.estimate = max(report.estimate, left.estimate)
		if r.gvr == podsResource && left.count > 0 {
			logger.V(5).Info("Pods remain, delaying deletion of other content", "namespace", ns.Name, "pods", left.count)
			break
		}
	}
	logger.V(4).Info("Deleted namespace content", "namespace", ns.Name, "remaining", len(report.remaining), "estimate", report.estimate)
	return report
}

// leftover is what remains of one resource after it has been deleted.
type leftover struct {
	count      int
	finalizers map[string]int
	estimate   time.Duration
}

// emptyResource deletes every object of r in the namespace, with one DeleteCollection when the
// resource supports it and one Delete per object otherwise, then lists what is left.
func (c *Controller) emptyResource(ctx context.Context, namespace string, r resource) (leftover, error) {
	client := c.metadata.Resource(r.gvr).Namespace(namespace)
	// The namespace controller removes dependents itself, so the garbage collector must not
	// add the orphan finalizer to what it deletes.
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	resourceName := r.gvr.GroupResource().String()

	deleted := false
	if r.deleteCollection {
		switch err := client.DeleteCollection(ctx, opts, metav1.ListOptions{}); {
		case err == nil:
			deleted = true
		case unsupported(err):
			// Discovery promised more than the server does: delete one by one below.
		default:
			return leftover{}, fmt.Errorf("deleting all %s in namespace %s: %w", resourceName, namespace, err)
		}
	}
	if !r.list {
		return leftover{}, nil // nothing more can be deleted or checked
	}

	list, err := client.List(ctx, metav1.ListOptions{})
	if unsupported(err) {
		return leftover{}, nil
	}
	if err != nil {
		return leftover{}, fmt.Errorf("listing %s in namespace %s: %w", resourceName, namespace, err)
	}
	if !deleted && len(list.Items) > 0 {
		for _, item := range list.Items {
			if item.DeletionTimestamp != nil {
				continue // already going away
			}
			if err := client.Delete(ctx, item.Name, opts); err != nil && !unsupported(err) {
				return leftover{}, fmt.Errorf("deleting %s %s/%s: %w", resourceName, namespace, item.Name, err)
			}
		}
		if list, err = client.List(ctx, metav1.ListOptions{}); err != nil {
			return leftover{}, fmt.Errorf("listing %s in namespace %s: %w", resourceName, namespace, err)
		}
	}
	return leftoverOf(list.Items, r.gvr, namespace, c.clock.Now())
}

// leftoverOf summarizes the objects still present after deletion. Objects waiting out a
// grace period (a pod whose node agent is stopping it) or held by finalizers are expected;
// anything else should have gone and is an error.
func leftoverOf(items []metav1.PartialObjectMetadata, gvr schema.GroupVersionResource, namespace string, now time.Time) (leftover, error) {
	if len(items) == 0 {
		return leftover{}, nil
	}
	left := leftover{count: len(items), finalizers: map[string]int{}}
	for _, item := range items {
		for _, f := range item.Finalizers {
			left.finalizers[f]++
		}
		// The API server sets deletionTimestamp to the end of the grace period.
		if item.DeletionTimestamp != nil {
			left.estimate = max(left.estimate, item.DeletionTimestamp.Sub(now))
		}
	}
	if left.estimate > 0 {
		return left, nil
	}
	if len(left.finalizers) > 0 {
		left.estimate = finalizerEstimate
		return left, nil
	}
	return left, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", namespace, gvr)
}

// unsupported reports an error that means the server does not offer the operation for this
// resource; a resource listed by discovery without top-level verbs answers NotFound.
func unsupported(err error) bool {
	return apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err)
}

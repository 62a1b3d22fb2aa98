// Package history is the revision history of the workload controllers that roll their pods
// from one template to the next (StatefulSet, DaemonSet): each template a controller has run
// is kept as an apps/v1 ControllerRevision it owns, named "<owner>-<hash>" and numbered in
// order, so that a pod's controller-revision-hash label says which template made it and a
// rollback reuses an old revision (with a new number) rather than writing a new one. It is
// upstream's pkg/controller/history: the same names, the same hash, the same ordering, so
// that revisions written by kube-controller-manager and by berth are interchangeable.
//
// The pure part (this file) names, hashes, compares and sorts revisions; store.go lists
// them from the shared informer's cache, claims them through pkg/controllers/controllerref
// and writes them through the client.
package history

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// ControllerRevisionHashLabel is the label of a revision that holds its hash (upstream's
// controller.kubernetes.io/hash).
const ControllerRevisionHashLabel = "controller.kubernetes.io/hash"

// maxPrefixLength keeps "<prefix>-<hash>" a valid name: 253 characters less the dash and
// the longest hash, as upstream.
const maxPrefixLength = 223

// Name returns the name of the revision of hash for an owner named prefix: "<prefix>-<hash>",
// the prefix cut to 223 characters.
func Name(prefix, hash string) string {
	if len(prefix) > maxPrefixLength {
		prefix = prefix[:maxPrefixLength]
	}
	return fmt.Sprintf("%s-%s", prefix, hash)
}

// Hash is upstream's HashControllerRevision: the FNV-32 hash of the revision's data, with
// the collision count (probe) appended when not nil, as a safe-encoded string. The data is
// Raw, or Object printed for hashing; as upstream, hashing an Object starts the hash over,
// so a revision with both is hashed by its Object.
func Hash(revision *appsv1.ControllerRevision, probe *int32) string {
	hf := fnv.New32()
	if len(revision.Data.Raw) > 0 {
		hf.Write(revision.Data.Raw)
	}
	if revision.Data.Object != nil {
		hf.Reset()
		fmt.Fprintf(hf, "%v", dump.ForHash(revision.Data.Object))
	}
	if probe != nil {
		hf.Write([]byte(strconv.FormatInt(int64(*probe), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(hf.Sum32()))
}

// New returns the revision numbered revision of parent (of kind parentKind) holding data:
// labelled with templateLabels and its hash, controlled by parent, named by Name from
// parent's name and the hash with collisionCount. It is not yet stored; its namespace is
// parent's.
func New(parent metav1.Object, parentKind schema.GroupVersionKind, templateLabels map[string]string,
	data runtime.RawExtension, revision int64, collisionCount *int32) *appsv1.ControllerRevision {
	labels := make(map[string]string, len(templateLabels)+1)
	for k, v := range templateLabels {
		labels[k] = v
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       parent.GetNamespace(),
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, parentKind)},
		},
		Data:     data,
		Revision: revision,
	}
	hash := Hash(cr, collisionCount)
	cr.Name = Name(parent.GetName(), hash)
	cr.Labels[ControllerRevisionHashLabel] = hash
	return cr
}

// Equal reports whether two revisions hold the same data (two nils are equal).
func Equal(lhs, rhs *appsv1.ControllerRevision) bool {
	if lhs == nil || rhs == nil {
		return lhs == rhs
	}
	return bytes.Equal(lhs.Data.Raw, rhs.Data.Raw) && apiequality.Semantic.DeepEqual(lhs.Data.Object, rhs.Data.Object)
}

// FindEqual returns those of revisions that hold needle's data, in their order.
func FindEqual(revisions []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var eq []*appsv1.ControllerRevision
	for _, r := range revisions {
		if Equal(r, needle) {
			eq = append(eq, r)
		}
	}
	return eq
}

// Sort sorts revisions by number, then creation time, then name (stable, as upstream).
func Sort(revisions []*appsv1.ControllerRevision) {
	sort.SliceStable(revisions, func(i, j int) bool {
		a, b := revisions[i], revisions[j]
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}

// Next is the number of the revision after sorted revisions: one more than the last's,
// or 1 for none.
func Next(revisions []*appsv1.ControllerRevision) int64 {
	if len(revisions) == 0 {
		return 1
	}
	return revisions[len(revisions)-1].Revision + 1
}

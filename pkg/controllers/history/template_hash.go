package history

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// ComputeHash is the hash of a pod template that names a Deployment's ReplicaSets
// (pod-template-hash) and a DaemonSet's revisions (controller-revision-hash): upstream's
// controller.ComputeHash, so that a template gets the same names and labels in berth as in
// Kubernetes, and pods made by kube-controller-manager are not rolled when berth takes over. It is FNV-32a over the template printed by
// dump.ForHash (spew, sorted keys, pointers followed), then the collision count's four bytes
// little-endian in an eight-byte buffer, and the sum's decimal digits encoded with
// rand.SafeEncodeString. The template is printed as a value, not a pointer, as upstream does:
// the printing starts with the type's name, so that changes the hash.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	hasher := fnv.New32a()
	fmt.Fprintf(hasher, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		buf := make([]byte, 8)
		binary.LittleEndian.PutUint32(buf, uint32(*collisionCount))
		hasher.Write(buf)
	}
	return rand.SafeEncodeString(fmt.Sprint(hasher.Sum32()))
}

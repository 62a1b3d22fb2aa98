// Package managedfields holds the informer transform that kube-apiserver, kube-controller-manager
// and kube-scheduler all apply to their shared informers: a cached object keeps no
// metadata.managedFields. Nothing that reads a lister uses them (server-side apply runs in the
// API server against etcd's copy), and they are a large part of every small object — the
// bootstrap policy's roles above all.
package managedfields

import "k8s.io/apimachinery/pkg/api/meta"

// Trim drops obj's managedFields. It is a cache.TransformFunc: the informer calls it on each
// object it receives, before storing it, and on nothing else (tombstones pass unchanged).
func Trim(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

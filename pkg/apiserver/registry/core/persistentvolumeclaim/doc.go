// Package persistentvolumeclaim is the registry of core/v1 PersistentVolumeClaims: their
// defaults and validation (upstream's v1 defaults and core validation, written for the v1
// types), their strategies, table and storage, with the status subresource. StatefulSets'
// claim templates are defaulted and validated with the same functions, as upstream's are.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /api/v1/namespaces/{ns}/persistentvolumeclaims and its status.
// The kubernetes.io/pvc-protection finalizer is admission's (StorageObjectInUseProtection);
// binding a claim to a volume is a controller's, not the registry's.
package persistentvolumeclaim

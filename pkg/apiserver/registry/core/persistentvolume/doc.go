// Package persistentvolume is the registry of core/v1 PersistentVolumes: their defaults and
// validation (upstream's v1 defaults and core validation of volumes, their sources and node
// affinity, written for the v1 types), their strategies, table and storage, with the status
// subresource.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /api/v1/persistentvolumes and its status. The kubernetes.io/pv-protection
// finalizer is admission's (StorageObjectInUseProtection); binding, provisioning and reclaiming
// volumes are controllers'.
package persistentvolume

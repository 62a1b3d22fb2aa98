// Package lease is the registry of leases (coordination.k8s.io/v1): their validation,
// their strategy and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for leases, which node heartbeats and leader election write every few
// seconds. Leases have no defaults.
package lease

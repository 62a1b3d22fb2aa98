// Package replicationcontroller is the registry of core/v1 ReplicationControllers: their
// defaults and validation (upstream's core/v1 defaults and ValidateReplicationController,
// written for the v1 types; the template's rules are the pod registry's), their strategies,
// table and storage, with the status and scale subresources.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /api/v1/namespaces/{ns}/replicationcontrollers and its subresources.
package replicationcontroller

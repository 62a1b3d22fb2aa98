// Package podtemplate is the registry of core/v1 PodTemplates: their defaults and
// validation (the pod template rules every workload shares, from the pod registry), their
// strategy, table and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /api/v1/namespaces/{ns}/podtemplates.
package podtemplate

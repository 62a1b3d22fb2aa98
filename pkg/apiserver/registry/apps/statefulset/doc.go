// Package statefulset is the registry of apps/v1 StatefulSets: their defaults and validation
// (upstream's apps/v1 defaults and apps validation, written for the v1 types; the template's
// rules are the pod registry's, the volume claim templates' are here), their strategies, table
// and storage, with the status and scale subresources.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/apps/v1/namespaces/{ns}/statefulsets and its subresources.
package statefulset

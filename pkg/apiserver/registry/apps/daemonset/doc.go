// Package daemonset is the registry of apps/v1 DaemonSets: their defaults and validation
// (upstream's apps/v1 defaults and apps validation, written for the v1 types; the template's
// rules are the pod registry's), their strategies, table and storage, with the status
// subresource.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/apps/v1/namespaces/{ns}/daemonsets and its subresource.
//
// A DaemonSet's template generation (upstream's internal spec.templateGeneration) lives in
// apps/v1 in the deprecated.daemonset.template.generation annotation, as upstream's
// conversion puts it there: 1 at creation, one more at each change of the template, and
// nobody else's to set.
package daemonset

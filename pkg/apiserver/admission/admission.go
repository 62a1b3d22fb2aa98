// Package admission holds berth's admission plugins: the "admit" step of a request's path
// ("decode → default → validate → admit → store") for what Kubernetes does in admission rather
// than in defaulting — the service account of a pod, its priority, its default tolerations,
// its RuntimeClass's overhead and scheduling, its LimitRanges' defaults and bounds, the
// protection finalizers of claims and volumes, which claims may grow, what quota allows
// (ResourceQuota, k8s.io/apiserver's plugin with berth's evaluators) — and what a node's
// credentials may write (NodeRestriction).
// NamespaceLifecycle comes from k8s.io/apiserver itself.
package admission

import (
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
)

// Order is the order of the admission chain, as kube-apiserver orders the same plugins.
// Mutating plugins run first, in this order; validating ones after them.
var Order = []string{
	lifecycle.PluginName,
	LimitRangerPluginName,
	ServiceAccountPluginName,
	NodeRestrictionPluginName,
	DefaultTolerationSecondsPluginName,
	PriorityPluginName,
	StorageObjectInUseProtectionPluginName,
	PersistentVolumeClaimResizePluginName,
	RuntimeClassPluginName,
	CertificateApprovalPluginName,
	CertificateSigningPluginName,
	ClusterTrustBundleAttestPluginName,
	CertificateSubjectRestrictionPluginName,
	// The extension points, k8s.io/apiserver's own plugins, after the built-in rules and
	// before quota, in kube-apiserver's order: policies and webhooks see the object as the
	// other plugins made it.
	mutatingadmissionpolicy.PluginName,
	mutatingwebhook.PluginName,
	validatingadmissionpolicy.PluginName,
	validatingwebhook.PluginName,
	// Last, as in kube-apiserver: quota charges the object as the other plugins left it.
	ResourceQuotaPluginName,
}

// Register adds berth's plugins to plugins.
func Register(plugins *admission.Plugins) {
	registerLimitRanger(plugins)
	registerServiceAccount(plugins)
	registerNodeRestriction(plugins)
	registerDefaultTolerationSeconds(plugins)
	registerPriority(plugins)
	registerStorageObjectInUseProtection(plugins)
	registerPersistentVolumeClaimResize(plugins)
	registerRuntimeClass(plugins)
	registerCertificates(plugins)
	registerResourceQuota(plugins)
}

// isPod reports whether the request is for a pod itself, not one of its subresources.
func isPod(a admission.Attributes) bool {
	return a.GetResource().GroupResource().Group == "" && a.GetResource().Resource == "pods" && a.GetSubresource() == ""
}

// Package admission holds berth's admission plugins: the "admit" step of a request's path
// ("decode → default → validate → admit → store") for what Kubernetes does in admission rather
// than in defaulting — the service account of a pod, its priority, its default tolerations,
// its RuntimeClass's overhead and scheduling, its LimitRanges' defaults and bounds, the
// protection finalizers of claims and volumes, which claims may grow — and what a node's
// credentials may write (NodeRestriction).
// NamespaceLifecycle comes from k8s.io/apiserver itself.
package admission

import (
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
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
}

// isPod reports whether the request is for a pod itself, not one of its subresources.
func isPod(a admission.Attributes) bool {
	return a.GetResource().GroupResource().Group == "" && a.GetResource().Resource == "pods" && a.GetSubresource() == ""
}

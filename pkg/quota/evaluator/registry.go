// Package evaluator is berth's quota evaluators: how much of a ResourceQuota's resources one
// object uses (a pod's requests and limits, a service's node ports, a claim's storage) and
// which quota scopes it falls in. kube-apiserver's ResourceQuota admission plugin
// (k8s.io/apiserver/pkg/admission/plugin/resourcequota) charges a new object against the
// quotas of its namespace with them; the resource-quota controller
// (pkg/controllers/resourcequota) adds up what a namespace holds with them for each quota's
// status.used.
//
// As upstream's pkg/quota/v1/evaluator/core: pods, services and persistentvolumeclaims have
// evaluators of their own; configmaps, secrets, replicationcontrollers and resourcequotas are
// counted under both "count/<resource>" and their legacy names; any other resource is counted
// as "count/<resource>.<group>" by a generic object-count evaluator (the admission plugin
// makes one on demand, the controller one per resource it discovers).
package evaluator

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/utils/clock"
)

// legacyCounts are the resources counted under an old name too ("secrets" beside
// "count/secrets"), from before object-count quota had a general form.
var legacyCounts = map[schema.GroupResource]corev1.ResourceName{
	corev1.Resource("configmaps"):             corev1.ResourceConfigMaps,
	corev1.Resource("resourcequotas"):         corev1.ResourceQuotas,
	corev1.Resource("replicationcontrollers"): corev1.ResourceReplicationControllers,
	corev1.Resource("secrets"):                corev1.ResourceSecrets,
}

// New returns the evaluators of pods, services, claims and the legacy counted resources.
// listerFor gives the listers their UsageStats read (the controller's informers); admission,
// which only charges the object at hand, passes nil.
func New(listerFor quota.ListerForResourceFunc, clk clock.PassiveClock) []quota.Evaluator {
	lister := func(resource string) generic.ListFuncByNamespace {
		return generic.ListResourceUsingListerFunc(listerFor, corev1.SchemeGroupVersion.WithResource(resource))
	}
	evaluators := []quota.Evaluator{
		&podEvaluator{list: lister("pods"), clock: clk},
		&serviceEvaluator{list: lister("services")},
		&claimEvaluator{list: lister("persistentvolumeclaims")},
	}
	for gr, alias := range legacyCounts {
		evaluators = append(evaluators, generic.NewObjectCountEvaluator(gr, lister(gr.Resource), alias))
	}
	return evaluators
}

// ignoredResources are never charged to a quota: reviews and other resources that are not
// stored, and events, which quota has never counted (upstream's list).
var ignoredResources = map[schema.GroupResource]struct{}{
	corev1.Resource("bindings"):                           {},
	corev1.Resource("componentstatuses"):                  {},
	corev1.Resource("events"):                             {},
	eventsv1.Resource("events"):                           {},
	authenticationv1.Resource("tokenreviews"):             {},
	authenticationv1.Resource("selfsubjectreviews"):       {},
	authorizationv1.Resource("subjectaccessreviews"):      {},
	authorizationv1.Resource("selfsubjectaccessreviews"):  {},
	authorizationv1.Resource("localsubjectaccessreviews"): {},
	authorizationv1.Resource("selfsubjectrulesreviews"):   {},
}

// IgnoredResources returns the resources quota never charges; the map is shared, not to be
// changed.
func IgnoredResources() map[schema.GroupResource]struct{} { return ignoredResources }

// NewConfiguration is the quota configuration of the admission plugin and the controller:
// the evaluators of New and the ignored resources.
func NewConfiguration(listerFor quota.ListerForResourceFunc, clk clock.PassiveClock) quota.Configuration {
	return generic.NewConfiguration(New(listerFor, clk), ignoredResources)
}

// Package scheme is the type registry of berth's API server: the first step of a request's path
// ("decode → default → validate → admit → store") looks types up here.
//
// berth serves the k8s.io/api types and stores them unchanged, so it has no internal types of its
// own: every external type is registered a second time under its group's internal version. A
// conversion between the two is then only a relabelling of the kind, and no conversion functions
// exist, except where two versions share one stored object, as in Kubernetes: events.k8s.io/v1
// Events are stored as core/v1 Events, autoscaling/v1 HorizontalPodAutoscalers as autoscaling/v2
// ones.
package scheme

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

var (
	// Scheme holds every type the API server serves, in both its external and its internal version.
	Scheme = runtime.NewScheme()
	// Codecs encodes and decodes the types of Scheme (JSON, YAML, protobuf).
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec converts query parameters into option objects.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

// GroupVersions are the API versions of the scheme, in the order of discovery: those served
// (servedGroupVersions), a group's preferred version first. autoscaling/v1 also holds Scale,
// the body of every scale subresource.
var GroupVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion,
	appsv1.SchemeGroupVersion,
	batchv1.SchemeGroupVersion,
	autoscalingv2.SchemeGroupVersion,
	autoscalingv1.SchemeGroupVersion,
	coordinationv1.SchemeGroupVersion,
	eventsv1.SchemeGroupVersion,
	schedulingv1.SchemeGroupVersion,
	policyv1.SchemeGroupVersion,
	authenticationv1.SchemeGroupVersion,
	authorizationv1.SchemeGroupVersion,
	rbacv1.SchemeGroupVersion,
	discoveryv1.SchemeGroupVersion,
	networkingv1.SchemeGroupVersion,
	nodev1.SchemeGroupVersion,
	admissionregistrationv1.SchemeGroupVersion,
	certificatesv1.SchemeGroupVersion,
	flowcontrolv1.SchemeGroupVersion,
	storagev1.SchemeGroupVersion,
	resourcev1.SchemeGroupVersion,
	storagemigrationv1.SchemeGroupVersion,
}

func init() {
	utilruntime.Must(corev1.AddToScheme(Scheme))
	utilruntime.Must(appsv1.AddToScheme(Scheme))
	utilruntime.Must(batchv1.AddToScheme(Scheme))
	utilruntime.Must(autoscalingv1.AddToScheme(Scheme))
	utilruntime.Must(autoscalingv2.AddToScheme(Scheme))
	utilruntime.Must(coordinationv1.AddToScheme(Scheme))
	utilruntime.Must(eventsv1.AddToScheme(Scheme))
	utilruntime.Must(schedulingv1.AddToScheme(Scheme))
	utilruntime.Must(policyv1.AddToScheme(Scheme))
	utilruntime.Must(authenticationv1.AddToScheme(Scheme))
	utilruntime.Must(authorizationv1.AddToScheme(Scheme))
	utilruntime.Must(rbacv1.AddToScheme(Scheme))
	utilruntime.Must(discoveryv1.AddToScheme(Scheme))
	utilruntime.Must(networkingv1.AddToScheme(Scheme))
	utilruntime.Must(nodev1.AddToScheme(Scheme))
	for _, add := range moreGroups {
		utilruntime.Must(add(Scheme))
	}

	for _, gv := range GroupVersions {
		addAsInternal(Scheme, gv)
		if gv.Group != autoscalingv1.GroupName {
			utilruntime.Must(Scheme.SetVersionPriority(gv))
		}
	}
	// autoscaling/v2 is preferred, and the version HorizontalPodAutoscalers are stored at.
	utilruntime.Must(Scheme.SetVersionPriority(autoscalingv2.SchemeGroupVersion, autoscalingv1.SchemeGroupVersion))
	// events.k8s.io/v1 Events live in storage and in memory as core/v1 Events: the Go type
	// registered as the group's internal Event is corev1.Event, and conversion functions (in the
	// event registry) translate between the two shapes.
	internalEvents := schema.GroupVersion{Group: eventsv1.GroupName, Version: runtime.APIVersionInternal}
	Scheme.AddKnownTypeWithName(internalEvents.WithKind("Event"), &corev1.Event{})
	Scheme.AddKnownTypeWithName(internalEvents.WithKind("EventList"), &corev1.EventList{})
	// autoscaling/v1 and autoscaling/v2 HorizontalPodAutoscalers are one object, kept as
	// autoscaling/v2: that is the group's internal HorizontalPodAutoscaler, and conversion
	// functions (in the horizontalpodautoscaler registry) translate v1's shape. The group's
	// internal Scale is v1's, the only one.
	internalAutoscaling := schema.GroupVersion{Group: autoscalingv1.GroupName, Version: runtime.APIVersionInternal}
	Scheme.AddKnownTypeWithName(internalAutoscaling.WithKind("HorizontalPodAutoscaler"), &autoscalingv2.HorizontalPodAutoscaler{})
	Scheme.AddKnownTypeWithName(internalAutoscaling.WithKind("HorizontalPodAutoscalerList"), &autoscalingv2.HorizontalPodAutoscalerList{})

	// The types every group shares (Status, discovery documents), as Kubernetes registers them.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	Scheme.AddUnversionedTypes(schema.GroupVersion{Version: "v1"},
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}

// addAsInternal registers the Go types of gv under gv's internal version as well. The option and
// watch types that metav1.AddToGroupVersion put into every group are left out, as Kubernetes'
// internal versions do, except where the group itself defines them (core's PodLogOptions, ...).
func addAsInternal(s *runtime.Scheme, gv schema.GroupVersion) {
	internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
	if gv.Group == eventsv1.GroupName {
		return // its internal types are the core ones, registered in init
	}
	for kind, t := range s.KnownTypes(gv) {
		if isMetaKind(kind) || convertedKinds[gv.WithKind(kind).GroupKind()] {
			continue
		}
		obj, ok := newObject(t)
		if !ok {
			continue
		}
		s.AddKnownTypeWithName(internal.WithKind(kind), obj)
	}
}

// convertedKinds are the kinds whose internal type is not every version's own: they are
// registered in init.
var convertedKinds = map[schema.GroupKind]bool{
	{Group: autoscalingv1.GroupName, Kind: "HorizontalPodAutoscaler"}:     true,
	{Group: autoscalingv1.GroupName, Kind: "HorizontalPodAutoscalerList"}: true,
}

// moreGroups are the groups a v1.37 kube-apiserver serves beyond the workloads and
// identities: admission configuration, certificates, API priority and fairness, storage,
// dynamic resource allocation, and storage version migration.
var moreGroups = []func(*runtime.Scheme) error{
	admissionregistrationv1.AddToScheme, certificatesv1.AddToScheme, flowcontrolv1.AddToScheme,
	storagev1.AddToScheme, resourcev1.AddToScheme, storagemigrationv1.AddToScheme,
}

// External holds only the external versions. The OpenAPI definition namer reads it, so that
// the internal versions do not leak into x-kubernetes-group-version-kind.
var External = runtime.NewScheme()

func init() {
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, coordinationv1.AddToScheme, eventsv1.AddToScheme,
		schedulingv1.AddToScheme, policyv1.AddToScheme, authenticationv1.AddToScheme,
		authorizationv1.AddToScheme, rbacv1.AddToScheme, discoveryv1.AddToScheme, networkingv1.AddToScheme, nodev1.AddToScheme,
	} {
		utilruntime.Must(add(External))
	}
	for _, add := range moreGroups {
		utilruntime.Must(add(External))
	}
	metav1.AddToGroupVersion(External, schema.GroupVersion{Version: "v1"})
}

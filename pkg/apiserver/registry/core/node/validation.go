package node

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	schedulinghelper "k8s.io/component-helpers/scheduling/corev1"
	netutils "k8s.io/utils/net"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// Several field paths below are upstream's, quirks included (taints and swap reported
// under "metadata"), so that clients see the same errors as from a Kubernetes API server.

// ValidateNode validates a node on create. An update of the main resource runs it as
// well as ValidateNodeUpdate; an update of nodes/status runs ValidateNodeUpdate alone, as
// upstream does.
func ValidateNode(node *corev1.Node) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&node.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(node.Finalizers, metaPath.Child("finalizers"))...)
	errs = append(errs, validateAnnotations(node.Annotations, metaPath.Child("annotations"))...)
	errs = append(errs, validateTaints(node.Spec.Taints, metaPath.Child("taints"))...)

	// Status is optional on create, but what is there must make sense.
	errs = append(errs, validateResources(node)...)
	if swap := node.Status.NodeInfo.Swap; swap != nil && swap.Capacity != nil && *swap.Capacity <= 0 {
		errs = append(errs, field.Invalid(metaPath.Child("nodeSwapStatus", "capacity"), *swap.Capacity, "must be greater than zero"))
	}
	errs = append(errs, validateDeclaredFeatures(node.Status.DeclaredFeatures, field.NewPath("status", "declaredFeatures"))...)
	return append(errs, validatePodCIDRs(node.Spec.PodCIDRs, field.NewPath("spec", "podCIDRs"))...)
}

// ValidateNodeUpdate validates what an update may change: podCIDRs and providerID may be
// set once (the CIDR allocator and the cloud provider fill them in) but not changed,
// externalID never changes, and status must stay consistent.
func ValidateNodeUpdate(newNode, oldNode *corev1.Node) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&newNode.ObjectMeta, &oldNode.ObjectMeta, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(newNode.Finalizers, metaPath.Child("finalizers"))...)
	errs = append(errs, validateAnnotations(newNode.Annotations, metaPath.Child("annotations"))...)
	errs = append(errs, validateResources(newNode)...)
	errs = append(errs, validateDeclaredFeatures(newNode.Status.DeclaredFeatures, field.NewPath("status", "declaredFeatures"))...)

	addressesPath := field.NewPath("status", "addresses")
	seen := make(map[corev1.NodeAddress]bool, len(newNode.Status.Addresses))
	for i, address := range newNode.Status.Addresses {
		if seen[address] {
			errs = append(errs, field.Duplicate(addressesPath.Index(i), address))
		}
		seen[address] = true
	}

	if old := oldNode.Spec.PodCIDRs; len(old) > 0 {
		// One error per changed entry, or one for a changed length, as upstream reports it.
		cidrsPath := field.NewPath("spec", "podCIDRs")
		const msg = `node updates may not change podCIDR except from "" to valid`
		if len(old) != len(newNode.Spec.PodCIDRs) {
			errs = append(errs, field.Forbidden(cidrsPath, msg))
		} else {
			for i := range old {
				if old[i] != newNode.Spec.PodCIDRs[i] {
					errs = append(errs, field.Forbidden(cidrsPath, msg))
				}
			}
		}
	}

	providerPath := field.NewPath("spec", "providerID")
	if oldID, newID := oldNode.Spec.ProviderID, newNode.Spec.ProviderID; oldID != "" {
		if newID == "" {
			errs = append(errs, field.Invalid(providerPath, nil, "field cannot be cleared once set"))
		} else if newID != oldID {
			errs = append(errs, field.Invalid(providerPath, nil, "field cannot be modified once set"))
		}
	}

	if source := newNode.Spec.ConfigSource; source != nil {
		errs = append(errs, validateConfigSource(source, field.NewPath("spec", "configSource"), true)...)
	}
	if config := newNode.Status.Config; config != nil {
		configPath := field.NewPath("status", "config")
		for _, s := range []struct {
			name   string
			source *corev1.NodeConfigSource
		}{{"assigned", config.Assigned}, {"active", config.Active}, {"lastKnownGood", config.LastKnownGood}} {
			if s.source != nil {
				errs = append(errs, validateConfigSource(s.source, configPath.Child(s.name), false)...)
			}
		}
	}

	errs = append(errs, validateTaints(newNode.Spec.Taints, metaPath.Child("taints"))...)
	if newNode.Spec.DoNotUseExternalID != oldNode.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	// Unschedulable and taints may change freely.
	return errs
}

var validTaintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

// validateTaints checks each taint and that no two share a key and an effect, since the
// scheduler and the eviction controller look taints up by that pair.
func validateTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	type keyEffect struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := sets.New[keyEffect]()
	for i, taint := range taints {
		idxPath := fldPath.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(taint.Key, idxPath.Child("key"))...)
		if msgs := validation.IsValidLabelValue(taint.Value); len(msgs) != 0 {
			errs = append(errs, field.Invalid(idxPath.Child("value"), taint.Value, strings.Join(msgs, ";")))
		}
		switch taint.Effect {
		case "":
			errs = append(errs, field.Required(idxPath.Child("effect"), ""))
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(idxPath.Child("effect"), taint.Effect, validTaintEffects))
		}

		ke := keyEffect{taint.Key, taint.Effect}
		if seen.Has(ke) {
			dup := field.Duplicate(idxPath, taint)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
			continue
		}
		seen.Insert(ke)
	}
	return errs
}

// validateAnnotations checks the JSON of the two scheduler annotations that older
// components still read.
func validateAnnotations(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if raw := annotations[corev1.TaintsAnnotationKey]; raw != "" {
		var taints []corev1.Taint
		if err := json.Unmarshal([]byte(raw), &taints); err != nil {
			errs = append(errs, field.Invalid(fldPath, corev1.TaintsAnnotationKey, err.Error()))
		} else {
			errs = append(errs, validateTaints(taints, fldPath.Child(corev1.TaintsAnnotationKey))...)
		}
	}
	if annotations[corev1.PreferAvoidPodsAnnotationKey] != "" {
		avoids, err := schedulinghelper.GetAvoidPodsFromNodeAnnotations(annotations)
		if err != nil {
			return append(errs, field.Invalid(fldPath.Child("AvoidPods"), corev1.PreferAvoidPodsAnnotationKey, err.Error()))
		}
		for i, entry := range avoids.PreferAvoidPods {
			idxPath := fldPath.Child(corev1.PreferAvoidPodsAnnotationKey).Index(i)
			controller := entry.PodSignature.PodController
			switch {
			case controller == nil:
				errs = append(errs, field.Required(idxPath.Child("PodSignature"), ""))
			case controller.Controller == nil || !*controller.Controller:
				errs = append(errs, field.Invalid(idxPath.Child("PodSignature", "PodController", "Controller"), false, "must point to a controller"))
			}
		}
	}
	return errs
}

// validateResources checks capacity and allocatable quantities.
func validateResources(node *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name string
		list corev1.ResourceList
	}{{"capacity", node.Status.Capacity}, {"allocatable", node.Status.Allocatable}} {
		for name, q := range list.list {
			errs = append(errs, validateQuantity(name, q, field.NewPath("status", list.name, string(name)))...)
		}
	}
	return errs
}

// validateQuantity requires a non-negative quantity, and a whole number for resources
// that count objects or devices.
func validateQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if isIntegerResource(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, q, "must be an integer"))
	}
	return errs
}

// integerResources are the standard resources that count whole objects.
var integerResources = sets.New(
	corev1.ResourcePods,
	corev1.ResourceQuotas,
	corev1.ResourceServices,
	corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets,
	corev1.ResourceConfigMaps,
	corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts,
	corev1.ResourceServicesLoadBalancers,
)

func isIntegerResource(name corev1.ResourceName) bool {
	return integerResources.Has(name) || isExtendedResource(name)
}

// isExtendedResource reports whether name is a device-plugin style resource
// ("example.com/gpu"): outside kubernetes.io, and usable as a quota key.
func isExtendedResource(name corev1.ResourceName) bool {
	s := string(name)
	native := !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
	if native || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

// featureNameRegexp: an UpperCamelCase segment, then optional "/segment" parts.
var featureNameRegexp = regexp.MustCompile(`^[A-Z][a-zA-Z0-9]*(\/[a-zA-Z][a-zA-Z0-9]*)*$`)

// validateDeclaredFeatures requires valid names in a sorted list without duplicates, so
// that the scheduler can compare lists cheaply.
func validateDeclaredFeatures(features []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, feature := range features {
		switch {
		case len(feature) > validation.DNS1123SubdomainMaxLength:
			errs = append(errs, field.Invalid(fldPath.Index(i), feature,
				fmt.Sprintf("invalid feature name %q: must be no more than %d characters", feature, validation.DNS1123SubdomainMaxLength)))
		case !featureNameRegexp.MatchString(feature):
			errs = append(errs, field.Invalid(fldPath.Index(i), feature,
				fmt.Sprintf("invalid feature name %q: must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., MyFeature or MyFeature/mySubFeature), and contain only alphanumeric characters and slashes", feature)))
		}
		if i+1 < len(features) {
			next := features[i+1]
			if next == feature {
				errs = append(errs, field.Duplicate(fldPath.Index(i+1), next))
			} else if next < feature {
				errs = append(errs, field.Invalid(fldPath.Index(i+1), next, "list must be sorted alphabetically"))
			}
		}
	}
	return errs
}

// validatePodCIDRs requires valid CIDRs, at most one per IP family.
func validatePodCIDRs(cidrs []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, cidr := range cidrs {
		// Strict: StrictIPCIDRValidation is on by default in the Kubernetes release berth tracks.
		errs = append(errs, validation.IsValidCIDRForLegacyField(fldPath.Index(i), cidr, true, nil)...)
	}
	if len(cidrs) > 1 {
		// An unparsable entry is already reported above; it also fails the dual-stack test.
		dualStack, _ := netutils.IsDualStackCIDRStrings(cidrs)
		if !dualStack || len(cidrs) > 2 {
			errs = append(errs, field.Invalid(fldPath, cidrs, "may specify no more than one CIDR for each IP family"))
		}
	}
	return errs
}

// validateConfigSource checks the deprecated dynamic kubelet config reference, still
// validated for compatibility. In spec the reference names a config map; in status it
// also records the uid and resourceVersion the kubelet saw.
func validateConfigSource(source *corev1.NodeConfigSource, fldPath *field.Path, inSpec bool) field.ErrorList {
	var errs field.ErrorList
	if source.ConfigMap == nil {
		// configMap is the only kind of reference; upstream words this generally.
		return append(errs, field.Invalid(fldPath, source, "exactly one reference subfield must be non-nil"))
	}
	cm := source.ConfigMap
	cmPath := fldPath.Child("configMap")
	if inSpec {
		if cm.UID != "" {
			errs = append(errs, field.Forbidden(cmPath.Child("uid"), "uid must not be set in spec"))
		}
		if cm.ResourceVersion != "" {
			errs = append(errs, field.Forbidden(cmPath.Child("resourceVersion"), "resourceVersion must not be set in spec"))
		}
	} else {
		if cm.UID == "" {
			errs = append(errs, field.Required(cmPath.Child("uid"), ""))
		}
		if cm.ResourceVersion == "" {
			errs = append(errs, field.Required(cmPath.Child("resourceVersion"), ""))
		}
	}
	errs = append(errs, validateName(cm.Namespace, cmPath.Child("namespace"), apivalidation.ValidateNamespaceName)...)
	errs = append(errs, validateName(cm.Name, cmPath.Child("name"), apivalidation.NameIsDNSSubdomain)...)
	if cm.KubeletConfigKey == "" {
		errs = append(errs, field.Required(cmPath.Child("kubeletConfigKey"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(cm.KubeletConfigKey) {
			errs = append(errs, field.Invalid(cmPath.Child("kubeletConfigKey"), cm.KubeletConfigKey, msg))
		}
	}
	return errs
}

func validateName(name string, fldPath *field.Path, nameFn apivalidation.ValidateNameFunc) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	for _, msg := range nameFn(name, false) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

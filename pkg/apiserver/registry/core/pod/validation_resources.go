package pod

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/berth-cluster/berth/pkg/apis/core/resourcename"
)

// This file validates compute resources: container and pod-level requests
// and limits, resource claims and resize policies.

// validatePodResources checks pod-level resources (spec.resources): valid
// names and quantities, and room for what the containers ask for.
func validatePodResources(spec *corev1.PodSpec, claimNames sets.Set[string], fldPath *field.Path) field.ErrorList {
	if spec.Resources == nil {
		return nil
	}
	resPath := fldPath.Child("resources")
	if spec.OS != nil && spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(resPath, "may not be set for a windows pod")}
	}
	var errs field.ErrorList
	if spec.Resources.Claims != nil {
		errs = append(errs, field.Forbidden(resPath.Child("claims"), "claims may not be set for Resources at pod-level"))
	}
	errs = append(errs, validateResourceRequirements(spec.Resources, podResourceName, claimNames, resPath)...)

	containersOnly := &corev1.Pod{Spec: corev1.PodSpec{Containers: spec.Containers, InitContainers: spec.InitContainers}}
	opts := resourcehelper.PodResourcesOptions{}
	for name, containers := range resourcehelper.AggregateContainerRequests(containersOnly, opts) {
		if pod, ok := spec.Resources.Requests[name]; ok && containers.Cmp(pod) > 0 {
			errs = append(errs, field.Invalid(resPath.Child("requests").Key(string(name)), pod.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", containers.String())))
		}
	}
	// Hugepages cannot be overcommitted, so the pod must hold all of them.
	for name, containers := range resourcehelper.AggregateContainerLimits(containersOnly, opts) {
		if pod, ok := spec.Resources.Limits[name]; ok && resourcename.IsHugePages(name) && containers.Cmp(pod) > 0 {
			errs = append(errs, field.Invalid(resPath.Child("limits").Key(string(name)), pod.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container limits of %s", containers.String())))
		}
	}
	for i, c := range spec.Containers {
		for name, limit := range c.Resources.Limits {
			if pod, ok := spec.Resources.Limits[name]; ok && limit.Cmp(pod) > 0 {
				// Upstream's path, quirks included.
				p := resPath.Child("containers").Index(i).Key(string(name)).Child("limits")
				errs = append(errs, field.Invalid(p, limit.String(), fmt.Sprintf("must be less than or equal to pod limits of %s", pod.String())))
			}
		}
	}
	return errs
}

// validateResourceRequirements checks resource names and quantities and that
// requests fit the limits: at most the limit, or exactly it for resources
// that cannot be overcommitted (hugepages, extended resources).
func validateResourceRequirements(r *corev1.ResourceRequirements, validateName func(corev1.ResourceName, *field.Path) field.ErrorList, claimNames sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	cpuOrMemory, hugePages := false, false
	for name, q := range r.Limits {
		p := limPath.Key(string(name))
		errs = append(errs, validateName(name, p)...)
		errs = append(errs, validateQuantity(name, q, p)...)
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
		hugePages = hugePages || resourcename.IsHugePages(name)
	}
	for name, q := range r.Requests {
		p := reqPath.Key(string(name))
		errs = append(errs, validateName(name, p)...)
		errs = append(errs, validateQuantity(name, q, p)...)
		if limit, ok := r.Limits[name]; ok {
			if q.Cmp(limit) != 0 && !isOvercommitAllowed(name) {
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			} else if q.Cmp(limit) > 0 {
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !isOvercommitAllowed(name) {
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
		hugePages = hugePages || resourcename.IsHugePages(name)
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return append(errs, validateResourceClaimRefs(r.Claims, claimNames, fldPath.Child("claims"))...)
}

func validateQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), "must be greater than or equal to 0"))
	}
	if resourcename.IsExtended(name) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, q, "must be an integer"))
	}
	if resourcename.IsHugePages(name) {
		// Hugepages come in pages: the amount must be a whole number of them.
		size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
		if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 || q.Value()%size.Value() != 0 {
			errs = append(errs, field.Invalid(fldPath, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name)))
		}
	}
	return errs
}

// standardResourceNames are the unprefixed resource names Kubernetes knows
// (for any object); containers may only use the compute ones.
var standardResourceNames = sets.New("cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
	"requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas",
	"services", "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage",
	"requests.storage", "services.nodeports", "services.loadbalancers")

// validateResourceName is shared by container and pod resources: a
// qualified name, and a known one if it has no domain.
func validateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := qualifiedName(string(name), fldPath); len(errs) > 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") && !standardResourceNames.Has(string(name)) &&
		!resourcename.IsHugePages(name) && !strings.HasPrefix(string(name), "requests.hugepages-") {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a standard resource type or fully qualified")}
	}
	return nil
}

func containerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage && !resourcename.IsHugePages(name) {
			errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !resourcename.IsNative(name) && !resourcename.IsExtended(name) {
		errs = append(errs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

func podResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := validateResourceName(name, fldPath); len(errs) > 0 {
		return errs
	}
	if !resourcehelper.IsSupportedPodLevelResource(name) {
		return field.ErrorList{field.NotSupported(fldPath, name, sets.List(resourcehelper.SupportedPodLevelResources()))}
	}
	return nil
}

// validateResourceClaimRefs checks resources.claims: each names a pod
// resource claim (optionally one request of it), once.
func validateResourceClaimRefs(claims []corev1.ResourceClaim, podClaims sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range claims {
		p := fldPath.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p, ""))
			continue
		}
		key := c.Name
		if c.Request != "" {
			errs = append(errs, dns1123Label(c.Request, p.Child("request"))...)
			key += "/" + c.Request
		}
		switch {
		case seen.Has(c.Name):
			errs = append(errs, field.Duplicate(p, c.Name)) // the whole claim is already in
		case seen.Has(key):
			errs = append(errs, field.Duplicate(p, key))
		case c.Request == "":
			for k := range seen {
				if strings.HasPrefix(k, c.Name+"/") {
					errs = append(errs, field.Duplicate(p, c.Name)) // a request of it is already in
				}
			}
		}
		seen.Insert(key)
		if !podClaims.Has(c.Name) {
			e := field.NotFound(p, c.Name)
			e.Detail = "must be one of the names in pod.spec.resourceClaims"
			if podClaims.Len() == 0 {
				e.Detail += " which is empty"
			} else {
				e.Detail += ": " + strings.Join(sets.List(podClaims), ", ")
			}
			errs = append(errs, e)
		}
	}
	return errs
}

func validateResizePolicy(policies []corev1.ContainerResizePolicy, podRestart corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[corev1.ResourceName]()
	for i, rp := range policies {
		if seen.Has(rp.ResourceName) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), rp.ResourceName))
		}
		seen.Insert(rp.ResourceName)
		// Upstream reports these on the list, not the item.
		errs = append(errs, validateEnum(rp.ResourceName, fldPath, corev1.ResourceCPU, corev1.ResourceMemory)...)
		errs = append(errs, validateEnum(rp.RestartPolicy, fldPath, corev1.NotRequired, corev1.RestartContainer)...)
		if podRestart == corev1.RestartPolicyNever && rp.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(fldPath, rp.RestartPolicy, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

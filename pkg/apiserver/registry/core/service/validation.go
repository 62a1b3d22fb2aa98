package service

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// This file holds Service create and update validation and the rules for
// types and ports. The rest is split by subject: validation_ips.go
// (clusterIPs, IP families, external IPs, source ranges),
// validation_policy.go (session affinity, traffic policies, load-balancer
// class, traffic distribution), validation_status.go (services/status) and
// validation_warnings.go (the warnings a write returns).
//
// The rules are those of Kubernetes v1.37's pkg/apis/core/validation with the
// feature gates that are on by default in v1.37: RelaxedServiceNameValidation
// and PreferSameTrafficDistribution are GA, StrictIPCIDRValidation is beta and
// on. Field paths, error types and details are upstream's, quirks included
// (spec.LoadBalancerSourceRanges with a capital L, a top-level
// allocateLoadBalancerNodePorts path), since clients and users match on them.
//
// Validation runs after the registry has allocated: on create upstream fills
// in clusterIPs, ipFamilies, ipFamilyPolicy, node ports and the health-check
// node port before it validates, and these rules expect them filled.

var (
	supportedServiceTypes = sets.New(corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort,
		corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName)
	supportedPortProtocols = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)
)

// ValidateService validates a service on create: its metadata (the name is a
// DNS-1123 label, as with RelaxedServiceNameValidation, GA in v1.37) and its
// spec. Status is not validated: the strategy clears it on create.
func ValidateService(svc *corev1.Service) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&svc.ObjectMeta, true, apivalidation.NameIsDNSLabel, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(svc.Finalizers, metaPath.Child("finalizers"))...)
	return append(errs, validateServiceSpec(svc, nil)...)
}

// ValidateServiceUpdate validates an update of the main resource: metadata
// rules, what may not change (the primary clusterIP and IP family, the
// load-balancer class, the health-check node port), and the new state as on
// create. Values the old object already held are accepted even where the
// rules have since become stricter (legacy IP and CIDR forms).
func ValidateServiceUpdate(newSvc, oldSvc *corev1.Service) field.ErrorList {
	errs := validateMetadataUpdate(newSvc, oldSvc)
	errs = append(errs, validateClusterIPsUpdate(oldSvc, newSvc)...)
	errs = append(errs, validateIPFamiliesUpdate(oldSvc, newSvc)...)
	errs = append(errs, validateLoadBalancerClassUpdate(oldSvc, newSvc)...)
	errs = append(errs, validateHealthCheckNodePortUpdate(oldSvc, newSvc)...)
	return append(errs, validateServiceSpec(newSvc, oldSvc)...)
}

func validateMetadataUpdate(newSvc, oldSvc *corev1.Service) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&newSvc.ObjectMeta, &oldSvc.ObjectMeta, metaPath)
	return append(errs, namespace.ValidateMetadataFinalizers(newSvc.Finalizers, metaPath.Child("finalizers"))...)
}

// validateServiceSpec holds the rules shared by create and update (upstream's
// validateService). oldSvc is nil on create; on update it supplies the values
// that are accepted because they were accepted before. The order of the checks
// is upstream's, so that error lists read the same.
func validateServiceSpec(svc, oldSvc *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	portsPath := specPath.Child("ports")
	headless := headlessByClusterIPs(svc)

	errs := validateTopologyAnnotations(svc.Annotations)

	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(portsPath, ""))
	}
	errs = append(errs, validateTypeSpecificFields(svc, specPath)...)

	names := sets.New[string]()
	for i := range spec.Ports {
		errs = append(errs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, names, portsPath.Index(i))...)
	}

	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}

	errs = append(errs, validateSessionAffinity(spec, specPath)...)
	errs = append(errs, ValidateServiceClusterIPsRelatedFields(svc, oldSvc)...)
	errs = append(errs, validateExternalIPs(svc, oldSvc, specPath.Child("externalIPs"))...)

	if spec.Type == "" {
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	} else if !supportedServiceTypes.Has(spec.Type) {
		errs = append(errs, field.NotSupported(specPath.Child("type"), spec.Type, sets.List(supportedServiceTypes)))
	}

	errs = append(errs, validateNodePorts(spec, portsPath)...)
	errs = append(errs, validateUniquePorts(spec.Ports, portsPath)...)
	errs = append(errs, validateSourceRanges(svc, oldSvc, specPath)...)

	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		// Upstream reports this without the "spec." prefix; kept as is.
		errs = append(errs, field.Required(field.NewPath("allocateLoadBalancerNodePorts"), ""))
	}

	errs = append(errs, validateLoadBalancerClass(svc)...)
	errs = append(errs, validateExternalTrafficPolicy(svc)...)
	errs = append(errs, validateInternalTrafficPolicy(svc)...)
	return append(errs, validateTrafficDistribution(svc)...)
}

// validateTopologyAnnotations rejects the topology-mode annotation when the
// deprecated topology-aware-hints annotation says something else.
func validateTopologyAnnotations(annotations map[string]string) field.ErrorList {
	hints, hintsSet := annotations[corev1.DeprecatedAnnotationTopologyAwareHints]
	mode, modeSet := annotations[corev1.AnnotationTopologyMode]
	if !hintsSet || !modeSet || hints == mode {
		return nil
	}
	p := field.NewPath("metadata", "annotations").Key(corev1.AnnotationTopologyMode)
	return field.ErrorList{field.Invalid(p, mode,
		fmt.Sprintf("must match annotations[%s] when both are specified", corev1.DeprecatedAnnotationTopologyAwareHints))}
}

// validateTypeSpecificFields holds the rules of one type: node ports and load
// balancers need a cluster IP, and an ExternalName service is only a DNS name.
func validateTypeSpecificFields(svc *corev1.Service, specPath *field.Path) field.ErrorList {
	spec := &svc.Spec
	var errs field.ErrorList
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if headlessByClusterIPs(svc) {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0],
				fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		// The registry copies clusterIP into clusterIPs before validation, so
		// checking the list covers both fields.
		if len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		// The name is a CNAME target; a trailing dot marks it fully qualified.
		cname := strings.TrimSuffix(spec.ExternalName, ".")
		if cname == "" {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(cname) {
				errs = append(errs, field.Invalid(specPath.Child("externalName"), cname, msg))
			}
		}
	}
	return errs
}

// validateServicePort checks one port. names collects the names seen so far;
// a name is required when the service has several ports.
//
// Upstream tolerates a targetPort different from port on headless services
// (the v1 API always did), and so does berth.
func validateServicePort(sp *corev1.ServicePort, requireName bool, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	namePath := fldPath.Child("name")
	switch {
	case sp.Name == "" && requireName:
		errs = append(errs, field.Required(namePath, ""))
	case sp.Name != "":
		for _, msg := range validation.IsDNS1123Label(sp.Name) {
			errs = append(errs, field.Invalid(namePath, sp.Name, msg))
		}
		if names.Has(sp.Name) {
			errs = append(errs, field.Duplicate(namePath, sp.Name))
		} else {
			names.Insert(sp.Name)
		}
	}

	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), sp.Port, msg))
	}

	if sp.Protocol == "" {
		errs = append(errs, field.Required(fldPath.Child("protocol"), ""))
	} else if !supportedPortProtocols.Has(sp.Protocol) {
		errs = append(errs, field.NotSupported(fldPath.Child("protocol"), sp.Protocol, sets.List(supportedPortProtocols)))
	}

	errs = append(errs, validatePortNumOrName(sp.TargetPort, fldPath.Child("targetPort"))...)

	if sp.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*sp.AppProtocol) {
			errs = append(errs, field.Invalid(fldPath.Child("appProtocol"), *sp.AppProtocol, msg))
		}
	}
	return errs
}

// validatePortNumOrName checks a port given as a number or as the name of a
// container port.
func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

// validateNodePorts holds the node-port rules that do not depend on the
// configured range (the allocator checks that): none on a ClusterIP service,
// and no node port twice for one protocol.
func validateNodePorts(spec *corev1.ServiceSpec, portsPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Type == corev1.ServiceTypeClusterIP {
		for i, p := range spec.Ports {
			if p.NodePort != 0 {
				errs = append(errs, field.Forbidden(portsPath.Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}

	type key struct {
		protocol corev1.Protocol
		nodePort int32
	}
	seen := sets.New[key]()
	for i, p := range spec.Ports {
		if p.NodePort == 0 {
			continue
		}
		k := key{p.Protocol, p.NodePort}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(portsPath.Index(i).Child("nodePort"), p.NodePort))
		}
		seen.Insert(k)
	}
	return errs
}

// duplicatePort is the bad value of a duplicate-port error. Upstream reports
// an internal-API ServicePort holding only protocol and port, and the internal
// type has no JSON tags, so clients see
// {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}.
// This type has the same fields in the same order to print the same.
type duplicatePort struct {
	Name        string
	Protocol    corev1.Protocol
	AppProtocol *string
	Port        int32
	TargetPort  intstr.IntOrString
	NodePort    int32
}

// validateUniquePorts rejects a (protocol, port) pair that appears twice.
func validateUniquePorts(ports []corev1.ServicePort, portsPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[duplicatePort]()
	for i, p := range ports {
		k := duplicatePort{Protocol: p.Protocol, Port: p.Port}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(portsPath.Index(i), k))
		}
		seen.Insert(k)
	}
	return errs
}

// headlessByClusterIPs reports whether the service asks for no cluster IP
// (clusterIPs is ["None"]), the test validation uses. The warnings use
// clusterIP and the type instead, as upstream does.
func headlessByClusterIPs(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

package ingress

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// options are upstream's relaxations for an update of an Ingress stored before today's
// rules: TLS secret names and wildcard-host rules they refuse.
type options struct {
	allowInvalidSecretName       bool
	allowInvalidWildcardHostRule bool
}

var (
	pathTypes            = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
)

// ValidateIngressCreate validates a new Ingress; the class annotation and
// spec.ingressClassName must agree when both are set.
func ValidateIngressCreate(ing *networkingv1.Ingress) field.ErrorList {
	errs := validateIngress(ing, options{})
	if class, ok := ing.Annotations[ClassAnnotation]; ok && ing.Spec.IngressClassName != nil && class != *ing.Spec.IngressClassName {
		errs = append(errs, field.Invalid(field.NewPath("annotations").Child(ClassAnnotation), class, "must match `ingressClassName` when both are specified"))
	}
	return errs
}

// ValidateIngressUpdate validates an update: the new Ingress as on create, with the
// relaxations the stored one earns.
func ValidateIngressUpdate(ing, old *networkingv1.Ingress) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&ing.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	opts := options{}
	for _, tls := range old.Spec.TLS {
		opts.allowInvalidSecretName = opts.allowInvalidSecretName || len(validateSecretName(tls.SecretName)) > 0
	}
	for _, r := range old.Spec.Rules {
		if strings.Contains(r.Host, "*") && len(validateRuleValue(&r.IngressRuleValue, nil, options{})) > 0 {
			opts.allowInvalidWildcardHostRule = true
		}
	}
	return append(errs, validateIngress(ing, opts)...)
}

// ValidateIngressStatusUpdate validates a write to ingresses/status: the load balancer's IPs
// and hostnames.
func ValidateIngressStatusUpdate(ing, old *networkingv1.Ingress) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&ing.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	var oldIPs []string
	for _, lb := range old.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			oldIPs = append(oldIPs, lb.IP)
		}
	}
	p := field.NewPath("status", "loadBalancer", "ingress")
	for i, lb := range ing.Status.LoadBalancer.Ingress {
		ip := p.Index(i)
		if lb.IP != "" {
			// Strict: StrictIPCIDRValidation is on by default in the Kubernetes release berth tracks.
			errs = append(errs, validation.IsValidIPForLegacyField(ip.Child("ip"), lb.IP, true, oldIPs)...)
		}
		if lb.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(lb.Hostname) {
				errs = append(errs, field.Invalid(ip.Child("hostname"), lb.Hostname, msg))
			}
			if netutils.ParseIPSloppy(lb.Hostname) != nil {
				errs = append(errs, field.Invalid(ip.Child("hostname"), lb.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}

func validateIngress(ing *networkingv1.Ingress, opts options) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&ing.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, namespace.ValidateMetadataFinalizers(ing.Finalizers, meta.Child("finalizers"))...)

	spec, p := &ing.Spec, field.NewPath("spec")
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(p, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateBackend(spec.DefaultBackend, p.Child("defaultBackend"))...)
	}
	errs = append(errs, validateRules(spec.Rules, p.Child("rules"), opts)...)
	errs = append(errs, validateTLS(spec.TLS, p.Child("tls"), opts)...)
	if spec.IngressClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.IngressClassName, false) {
			errs = append(errs, field.Invalid(p.Child("ingressClassName"), *spec.IngressClassName, msg))
		}
	}
	return errs
}

// validateHost: a DNS subdomain, or a wildcard one when it has a "*"; never an IP.
func validateHost(host string, fldPath *field.Path) (errs field.ErrorList, wildcard bool) {
	check := validation.IsDNS1123Subdomain
	if strings.Contains(host, "*") {
		check, wildcard = validation.IsWildcardDNS1123Subdomain, true
	}
	for _, msg := range check(host) {
		errs = append(errs, field.Invalid(fldPath, host, msg))
	}
	return errs, wildcard
}

func validateTLS(tlss []networkingv1.IngressTLS, fldPath *field.Path, opts options) field.ErrorList {
	var errs field.ErrorList
	for i, tls := range tlss {
		for j, host := range tls.Hosts {
			hostErrs, _ := validateHost(host, fldPath.Index(i).Child("hosts").Index(j))
			errs = append(errs, hostErrs...)
		}
		if !opts.allowInvalidSecretName {
			for _, msg := range validateSecretName(tls.SecretName) {
				errs = append(errs, field.Invalid(fldPath.Index(i).Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	return errs
}

func validateSecretName(name string) []string {
	if name == "" {
		return nil
	}
	return apivalidation.NameIsDNSSubdomain(name, false)
}

func validateRules(rules []networkingv1.IngressRule, fldPath *field.Path, opts options) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		wildcard := false
		if r.Host != "" {
			hostPath := fldPath.Index(i).Child("host")
			if netutils.ParseIPSloppy(r.Host) != nil {
				errs = append(errs, field.Invalid(hostPath, r.Host, "must be a DNS name, not an IP address"))
			}
			var hostErrs field.ErrorList
			hostErrs, wildcard = validateHost(r.Host, hostPath)
			errs = append(errs, hostErrs...)
		}
		if !wildcard || !opts.allowInvalidWildcardHostRule {
			errs = append(errs, validateRuleValue(&r.IngressRuleValue, fldPath.Index(i), opts)...)
		}
	}
	return errs
}

func validateRuleValue(v *networkingv1.IngressRuleValue, fldPath *field.Path, _ options) field.ErrorList {
	if v.HTTP == nil {
		return nil
	}
	var errs field.ErrorList
	paths := fldPath.Child("http", "paths")
	if len(v.HTTP.Paths) == 0 {
		errs = append(errs, field.Required(paths, ""))
	}
	for i := range v.HTTP.Paths {
		errs = append(errs, validatePath(&v.HTTP.Paths[i], paths.Index(i))...)
	}
	return errs
}

func validatePath(path *networkingv1.HTTPIngressPath, fldPath *field.Path) field.ErrorList {
	if path.PathType == nil {
		return field.ErrorList{field.Required(fldPath.Child("pathType"), "pathType must be specified")}
	}
	var errs field.ErrorList
	p := fldPath.Child("path")
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(p, path.Path, "must be an absolute path"))
		}
		if path.Path != "" {
			for _, seq := range invalidPathSequences {
				if strings.Contains(path.Path, seq) {
					errs = append(errs, field.Invalid(p, path.Path, fmt.Sprintf("must not contain '%s'", seq)))
				}
			}
			for _, suffix := range invalidPathSuffixes {
				if strings.HasSuffix(path.Path, suffix) {
					errs = append(errs, field.Invalid(p, path.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
				}
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if path.Path != "" && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(p, path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("pathType"), *path.PathType, pathTypes))
	}
	return append(errs, validateBackend(&path.Backend, fldPath.Child("backend"))...)
}

// validateBackend: exactly one of a resource and a service; a service by a DNS label (the
// RelaxedServiceNameValidation gate is on, locked, in 1.37) and one port, by name or number.
func validateBackend(b *networkingv1.IngressBackend, fldPath *field.Path) field.ErrorList {
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(fldPath, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		return validateResourceRef(b.Resource, fldPath.Child("resource"))
	case b.Service == nil:
		return field.ErrorList{field.Invalid(fldPath, "", "resource or service backend is required")}
	}
	var errs field.ErrorList
	svc := fldPath.Child("service")
	if b.Service.Name == "" {
		errs = append(errs, field.Required(svc.Child("name"), ""))
	} else {
		for _, msg := range apivalidation.NameIsDNSLabel(b.Service.Name, false) {
			errs = append(errs, field.Invalid(svc.Child("name"), b.Service.Name, msg))
		}
	}
	port := b.Service.Port
	switch {
	case port.Name != "" && port.Number != 0:
		errs = append(errs, field.Invalid(fldPath, "", "cannot set both port name & port number"))
	case port.Name != "":
		for _, msg := range validation.IsValidPortName(port.Name) {
			errs = append(errs, field.Invalid(svc.Child("port", "name"), port.Name, msg))
		}
	case port.Number != 0:
		for _, msg := range validation.IsValidPortNum(int(port.Number)) {
			errs = append(errs, field.Invalid(svc.Child("port", "number"), port.Number, msg))
		}
	default:
		errs = append(errs, field.Required(fldPath, "port name or number is required"))
	}
	return errs
}

func validateResourceRef(ref *corev1.TypedLocalObjectReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.APIGroup != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*ref.APIGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("apiGroup"), *ref.APIGroup, msg))
		}
	}
	for _, f := range []struct{ name, value string }{{"kind", ref.Kind}, {"name", ref.Name}} {
		if f.value == "" {
			errs = append(errs, field.Required(fldPath.Child(f.name), ""))
			continue
		}
		for _, msg := range content.IsPathSegmentName(f.value) {
			errs = append(errs, field.Invalid(fldPath.Child(f.name), f.value, msg))
		}
	}
	return errs
}

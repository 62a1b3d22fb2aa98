package networkpolicy

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// options are upstream's relaxations for an update of a policy stored before today's rules:
// a pod selector with a label value they refuse, and CIDRs the strict parser refuses.
type options struct {
	allowInvalidLabelValue bool
	allowCIDRs             []string
}

// ValidateNetworkPolicy validates a new policy.
func ValidateNetworkPolicy(np *networkingv1.NetworkPolicy) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&np.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, namespace.ValidateMetadataFinalizers(np.Finalizers, meta.Child("finalizers"))...)
	return append(errs, validateSpec(&np.Spec, options{}, field.NewPath("spec"))...)
}

// ValidateNetworkPolicyUpdate validates an update: the new spec as on create, except that
// the values already stored (an invalid pod-selector label value, any CIDR of the old
// policy) stay acceptable.
func ValidateNetworkPolicyUpdate(np, old *networkingv1.NetworkPolicy) field.ErrorList {
	opts := options{
		allowInvalidLabelValue: len(metavalidation.ValidateLabelSelector(&old.Spec.PodSelector, metavalidation.LabelSelectorValidationOptions{}, nil)) > 0,
	}
	for _, rule := range old.Spec.Ingress {
		opts.allowCIDRs = appendCIDRs(opts.allowCIDRs, rule.From)
	}
	for _, rule := range old.Spec.Egress {
		opts.allowCIDRs = appendCIDRs(opts.allowCIDRs, rule.To)
	}
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&np.ObjectMeta, &old.ObjectMeta, meta)
	errs = append(errs, namespace.ValidateMetadataFinalizers(np.Finalizers, meta.Child("finalizers"))...)
	return append(errs, validateSpec(&np.Spec, opts, field.NewPath("spec"))...)
}

func appendCIDRs(cidrs []string, peers []networkingv1.NetworkPolicyPeer) []string {
	for _, p := range peers {
		if p.IPBlock != nil {
			cidrs = append(cidrs, p.IPBlock.CIDR)
			cidrs = append(cidrs, p.IPBlock.Except...)
		}
	}
	return cidrs
}

var policyTypes = []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}

func validateSpec(spec *networkingv1.NetworkPolicySpec, opts options, fldPath *field.Path) field.ErrorList {
	selOpts := metavalidation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.allowInvalidLabelValue}
	errs := metavalidation.ValidateLabelSelector(&spec.PodSelector, selOpts, fldPath.Child("podSelector"))
	for i, rule := range spec.Ingress {
		p := fldPath.Child("ingress").Index(i)
		errs = append(errs, validatePorts(rule.Ports, p.Child("ports"))...)
		errs = append(errs, validatePeers(rule.From, selOpts, opts, p.Child("from"))...)
	}
	for i, rule := range spec.Egress {
		p := fldPath.Child("egress").Index(i)
		errs = append(errs, validatePorts(rule.Ports, p.Child("ports"))...)
		errs = append(errs, validatePeers(rule.To, selOpts, opts, p.Child("to"))...)
	}
	typesPath := fldPath.Child("policyTypes")
	if len(spec.PolicyTypes) > len(policyTypes) {
		return append(errs, field.Invalid(typesPath, &spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range spec.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(typesPath.Index(i), t, policyTypes))
		}
	}
	return errs
}

var protocols = []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}

func validatePorts(ports []networkingv1.NetworkPolicyPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Protocol != nil && *port.Protocol != corev1.ProtocolTCP && *port.Protocol != corev1.ProtocolUDP && *port.Protocol != corev1.ProtocolSCTP {
			errs = append(errs, field.NotSupported(p.Child("protocol"), *port.Protocol, protocols))
		}
		switch {
		case port.Port == nil:
			if port.EndPort != nil {
				errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
			}
		case port.Port.Type == intstr.Int:
			for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
				errs = append(errs, field.Invalid(p.Child("port"), port.Port.IntVal, msg))
			}
			if port.EndPort != nil {
				if *port.EndPort < port.Port.IntVal {
					errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "must be greater than or equal to `port`"))
				}
				for _, msg := range validation.IsValidPortNum(int(*port.EndPort)) {
					errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, msg))
				}
			}
		default:
			if port.EndPort != nil {
				errs = append(errs, field.Invalid(p.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
			}
			for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
				errs = append(errs, field.Invalid(p.Child("port"), port.Port.StrVal, msg))
			}
		}
	}
	return errs
}

func validatePeers(peers []networkingv1.NetworkPolicyPeer, selOpts metavalidation.LabelSelectorValidationOptions, opts options, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, peer := range peers {
		p := fldPath.Index(i)
		n := 0
		for _, sel := range []struct {
			s    *metav1.LabelSelector
			name string
		}{{peer.PodSelector, "podSelector"}, {peer.NamespaceSelector, "namespaceSelector"}} {
			if sel.s != nil {
				n++
				errs = append(errs, metavalidation.ValidateLabelSelector(sel.s, selOpts, p.Child(sel.name))...)
			}
		}
		if peer.IPBlock != nil {
			n++
			errs = append(errs, validateIPBlock(peer.IPBlock, opts, p.Child("ipBlock"))...)
		}
		if n == 0 {
			errs = append(errs, field.Required(p, "must specify a peer"))
		} else if n > 1 && peer.IPBlock != nil {
			errs = append(errs, field.Forbidden(p, "may not specify both ipBlock and another peer"))
		}
	}
	return errs
}

// validateIPBlock: the CIDR and each exception parse strictly (unless the stored policy had
// them), and each exception lies strictly inside the CIDR.
func validateIPBlock(b *networkingv1.IPBlock, opts options, fldPath *field.Path) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(fldPath.Child("cidr"), "")}
	}
	// Strict: StrictIPCIDRValidation is on by default in the Kubernetes release berth tracks.
	errs := validation.IsValidCIDRForLegacyField(fldPath.Child("cidr"), b.CIDR, true, opts.allowCIDRs)
	_, cidr, err := netutils.ParseCIDRSloppy(b.CIDR)
	if err != nil {
		return errs
	}
	cidrLen, _ := cidr.Mask.Size()
	for i, s := range b.Except {
		p := fldPath.Child("except").Index(i)
		errs = append(errs, validation.IsValidCIDRForLegacyField(p, s, true, opts.allowCIDRs)...)
		_, except, err := netutils.ParseCIDRSloppy(s)
		if err != nil {
			continue
		}
		exceptLen, _ := except.Mask.Size()
		if !cidr.Contains(except.IP) || cidrLen >= exceptLen {
			errs = append(errs, field.Invalid(p, s, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}

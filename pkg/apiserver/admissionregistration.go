package apiserver

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/mutatingadmissionpolicy"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/mutatingadmissionpolicybinding"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/mutatingwebhookconfiguration"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/validatingadmissionpolicy"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/validatingadmissionpolicybinding"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/validatingwebhookconfiguration"
)

// addAdmissionRegistrationDefaults registers the defaults of admissionregistration.k8s.io/v1.
// Its kinds are selected by metadata only, which the scheme allows without a function.
func addAdmissionRegistrationDefaults(s *runtime.Scheme) {
	addDefaults(s, validatingwebhookconfiguration.SetDefaults, func(l *admissionregistrationv1.ValidatingWebhookConfigurationList) []admissionregistrationv1.ValidatingWebhookConfiguration {
		return l.Items
	})
	addDefaults(s, mutatingwebhookconfiguration.SetDefaults, func(l *admissionregistrationv1.MutatingWebhookConfigurationList) []admissionregistrationv1.MutatingWebhookConfiguration {
		return l.Items
	})
	addDefaults(s, validatingadmissionpolicy.SetDefaults, func(l *admissionregistrationv1.ValidatingAdmissionPolicyList) []admissionregistrationv1.ValidatingAdmissionPolicy {
		return l.Items
	})
	addDefaults(s, validatingadmissionpolicybinding.SetDefaults, func(l *admissionregistrationv1.ValidatingAdmissionPolicyBindingList) []admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		return l.Items
	})
	addDefaults(s, mutatingadmissionpolicy.SetDefaults, func(l *admissionregistrationv1.MutatingAdmissionPolicyList) []admissionregistrationv1.MutatingAdmissionPolicy {
		return l.Items
	})
	addDefaults(s, mutatingadmissionpolicybinding.SetDefaults, func(l *admissionregistrationv1.MutatingAdmissionPolicyBindingList) []admissionregistrationv1.MutatingAdmissionPolicyBinding {
		return l.Items
	})
}

// admissionregistrationStorage builds the admissionregistration.k8s.io/v1 endpoints: webhook
// configurations, validating and mutating policies and their bindings, and the validating
// policies' status, which their type checker writes.
func admissionregistrationStorage(getter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	validatingWebhooks, err := validatingwebhookconfiguration.NewREST(getter)
	if err != nil {
		return nil, err
	}
	mutatingWebhooks, err := mutatingwebhookconfiguration.NewREST(getter)
	if err != nil {
		return nil, err
	}
	validatingPolicies, err := validatingadmissionpolicy.NewStorage(getter)
	if err != nil {
		return nil, err
	}
	validatingBindings, err := validatingadmissionpolicybinding.NewREST(getter)
	if err != nil {
		return nil, err
	}
	mutatingPolicies, err := mutatingadmissionpolicy.NewREST(getter)
	if err != nil {
		return nil, err
	}
	mutatingBindings, err := mutatingadmissionpolicybinding.NewREST(getter)
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{
		"validatingwebhookconfigurations":    validatingWebhooks,
		"mutatingwebhookconfigurations":      mutatingWebhooks,
		"validatingadmissionpolicies":        validatingPolicies.Policy,
		"validatingadmissionpolicies/status": validatingPolicies.Status,
		"validatingadmissionpolicybindings":  validatingBindings,
		"mutatingadmissionpolicies":          mutatingPolicies,
		"mutatingadmissionpolicybindings":    mutatingBindings,
	}, nil
}

package deployment

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// replicaSetName is the deterministic name of the ReplicaSet for hash, "<deployment>-<hash>"
// (a retried create then meets its own ReplicaSet), the deployment's name cut so that the
// whole stays a valid DNS subdomain, as upstream's generateReplicaSetName.
func replicaSetName(deployment, hash string) string {
	if room := validation.DNS1123SubdomainMaxLength - 1 - len(hash); len(deployment) > room && room > 0 {
		deployment = deployment[:room]
	}
	return deployment + "-" + hash
}

// withLabel returns a copy of labels with key set to value.
func withLabel(labels map[string]string, key, value string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}

// withoutLabel returns a copy of labels without key.
func withoutLabel(labels map[string]string, key string) map[string]string {
	out := maps.Clone(labels)
	delete(out, key)
	return out
}

// selectorWithLabel is a copy of selector that also requires key=value (the ReplicaSet's
// selector: the deployment's and its pod-template-hash).
func selectorWithLabel(selector *metav1.LabelSelector, key, value string) *metav1.LabelSelector {
	if selector == nil {
		selector = &metav1.LabelSelector{}
	}
	out := selector.DeepCopy()
	out.MatchLabels = withLabel(out.MatchLabels, key, value)
	return out
}

// equalIgnoreHash reports whether two pod templates are the same but for their
// pod-template-hash labels: how a deployment recognises the ReplicaSet of its template. The
// hash is left out because a deployment's template has none, and because a hash computed by
// another release (the API's types grew) may differ for the same template.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return apiequality.Semantic.DeepEqual(a, b)
}

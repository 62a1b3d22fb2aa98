package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func fieldErrorSummary(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s", string(e.Type), e.Field))
	}
	slices.Sort(out)
	return out
}

func assertFieldErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	slices.Sort(want)
	if got := fieldErrorSummary(errs); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %v\nwant %v\nfull: %v", got, want, errs)
	}
}

func nodeForValidation(mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1.example.com", ResourceVersion: "1"}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func withTaints(ts ...corev1.Taint) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.Taints = ts }
}

func withPodCIDRs(cidrs ...string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.PodCIDRs = cidrs }
}

func withCapacity(kv ...string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Status.Capacity = corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			n.Status.Capacity[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
	}
}

func withAnnotation(key, value string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Annotations = map[string]string{key: value} }
}

func TestValidateNode(t *testing.T) {
	swap := func(v int64) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: &v} }
	}
	features := func(f ...string) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Status.DeclaredFeatures = f }
	}
	tests := []struct {
		name string
		node *corev1.Node
		want []string
	}{
		{name: "minimal", node: nodeForValidation()},
		{name: "full", node: nodeForValidation(
			withTaints(corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
				corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute},
				corev1.Taint{Key: "example.com/maint", Effect: corev1.TaintEffectPreferNoSchedule}),
			withPodCIDRs("10.244.1.0/24", "fd00:1::/64"),
			withCapacity("cpu", "4", "memory", "8Gi", "pods", "110", "example.com/gpu", "2", "hugepages-2Mi", "1Gi"),
			swap(1024), features("FeatureA", "FeatureB/sub"))},
		{name: "bad name", node: nodeForValidation(func(n *corev1.Node) { n.Name = "Node_1" }), want: []string{"FieldValueInvalid metadata.name"}},
		{name: "namespace set", node: nodeForValidation(func(n *corev1.Node) { n.Namespace = "default" }), want: []string{"FieldValueForbidden metadata.namespace"}},

		{name: "taint bad key", node: nodeForValidation(withTaints(corev1.Taint{Key: "bad key", Effect: corev1.TaintEffectNoSchedule})),
			want: []string{"FieldValueInvalid metadata.taints[0].key"}},
		{name: "taint bad value", node: nodeForValidation(withTaints(corev1.Taint{Key: "k", Value: "a b", Effect: corev1.TaintEffectNoSchedule})),
			want: []string{"FieldValueInvalid metadata.taints[0].value"}},
		{name: "taint no effect", node: nodeForValidation(withTaints(corev1.Taint{Key: "k"})),
			want: []string{"FieldValueRequired metadata.taints[0].effect"}},
		{name: "taint unknown effect", node: nodeForValidation(withTaints(corev1.Taint{Key: "k", Effect: "NoScheduleNoAdmit"})),
			want: []string{"FieldValueNotSupported metadata.taints[0].effect"}},
		{name: "duplicate taint key and effect", node: nodeForValidation(withTaints(
			corev1.Taint{Key: "k", Value: "a", Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: "k", Value: "b", Effect: corev1.TaintEffectNoSchedule})),
			want: []string{"FieldValueDuplicate metadata.taints[1]"}},

		{name: "taints annotation ok", node: nodeForValidation(withAnnotation(corev1.TaintsAnnotationKey, `[{"key":"k","effect":"NoSchedule"}]`))},
		{name: "taints annotation not json", node: nodeForValidation(withAnnotation(corev1.TaintsAnnotationKey, `{`)),
			want: []string{"FieldValueInvalid metadata.annotations"}},
		{name: "taints annotation bad taint", node: nodeForValidation(withAnnotation(corev1.TaintsAnnotationKey, `[{"key":"k","effect":"Sometimes"}]`)),
			want: []string{"FieldValueNotSupported metadata.annotations.scheduler.alpha.kubernetes.io/taints[0].effect"}},
		{name: "avoid pods annotation ok", node: nodeForValidation(withAnnotation(corev1.PreferAvoidPodsAnnotationKey,
			`{"preferAvoidPods":[{"podSignature":{"podController":{"apiVersion":"v1","kind":"ReplicationController","name":"rc","uid":"u","controller":true}}}]}`))},
		{name: "avoid pods annotation not a controller", node: nodeForValidation(withAnnotation(corev1.PreferAvoidPodsAnnotationKey,
			`{"preferAvoidPods":[{"podSignature":{"podController":{"apiVersion":"v1","kind":"ReplicationController","name":"rc","uid":"u"}}}]}`)),
			want: []string{"FieldValueInvalid metadata.annotations.scheduler.alpha.kubernetes.io/preferAvoidPods[0].PodSignature.PodController.Controller"}},
		{name: "avoid pods annotation without controller", node: nodeForValidation(withAnnotation(corev1.PreferAvoidPodsAnnotationKey,
			`{"preferAvoidPods":[{"podSignature":{}}]}`)),
			want: []string{"FieldValueRequired metadata.annotations.scheduler.alpha.kubernetes.io/preferAvoidPods[0].PodSignature"}},
		{name: "avoid pods annotation not json", node: nodeForValidation(withAnnotation(corev1.PreferAvoidPodsAnnotationKey, `x`)),
			want: []string{"FieldValueInvalid metadata.annotations.AvoidPods"}},

		{name: "negative capacity", node: nodeForValidation(withCapacity("memory", "-1Gi")), want: []string{"FieldValueInvalid status.capacity.memory"}},
		{name: "fractional pods", node: nodeForValidation(withCapacity("pods", "1.5")), want: []string{"FieldValueInvalid status.capacity.pods"}},
		{name: "fractional extended resource", node: nodeForValidation(withCapacity("example.com/gpu", "500m")),
			want: []string{"FieldValueInvalid status.capacity.example.com/gpu"}},
		{name: "fractional cpu is fine", node: nodeForValidation(withCapacity("cpu", "1500m", "kubernetes.io/whatever", "0.5"))},
		{name: "negative allocatable", node: nodeForValidation(func(n *corev1.Node) {
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		}), want: []string{"FieldValueInvalid status.allocatable.cpu"}},

		{name: "zero swap", node: nodeForValidation(swap(0)), want: []string{"FieldValueInvalid metadata.nodeSwapStatus.capacity"}},
		{name: "feature bad name", node: nodeForValidation(features("lowercase")), want: []string{"FieldValueInvalid status.declaredFeatures[0]"}},
		{name: "feature name too long", node: nodeForValidation(features("A" + strings.Repeat("a", 253))),
			want: []string{"FieldValueInvalid status.declaredFeatures[0]"}},
		{name: "features unsorted", node: nodeForValidation(features("B", "A")), want: []string{"FieldValueInvalid status.declaredFeatures[1]"}},
		{name: "features duplicated", node: nodeForValidation(features("A", "A")), want: []string{"FieldValueDuplicate status.declaredFeatures[1]"}},

		{name: "bad pod CIDR", node: nodeForValidation(withPodCIDRs("10.0.0.0/33")), want: []string{"FieldValueInvalid spec.podCIDRs[0]"}},
		{name: "non-canonical leading zeros", node: nodeForValidation(withPodCIDRs("010.0.0.0/24")), want: []string{"FieldValueInvalid spec.podCIDRs[0]"}},
		{name: "two IPv4 CIDRs", node: nodeForValidation(withPodCIDRs("10.0.0.0/24", "10.0.1.0/24")), want: []string{"FieldValueInvalid spec.podCIDRs"}},
		{name: "three CIDRs", node: nodeForValidation(withPodCIDRs("10.0.0.0/24", "fd00::/64", "10.0.1.0/24")), want: []string{"FieldValueInvalid spec.podCIDRs"}},
		{name: "unparsable second CIDR", node: nodeForValidation(withPodCIDRs("10.0.0.0/24", "x")),
			want: []string{"FieldValueInvalid spec.podCIDRs[1]", "FieldValueInvalid spec.podCIDRs"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateNode(tc.node), tc.want)
		})
	}
}

func TestValidateNodeUpdate(t *testing.T) {
	providerID := func(id string) func(*corev1.Node) { return func(n *corev1.Node) { n.Spec.ProviderID = id } }
	addresses := func(a ...corev1.NodeAddress) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Status.Addresses = a }
	}
	internal := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}
	hostname := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-1"}
	specSource := func(cm corev1.ConfigMapNodeConfigSource) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Spec.ConfigSource = &corev1.NodeConfigSource{ConfigMap: &cm} }
	}
	goodCM := corev1.ConfigMapNodeConfigSource{Namespace: "kube-system", Name: "kubelet", KubeletConfigKey: "kubelet"}

	tests := []struct {
		name     string
		old, new *corev1.Node
		want     []string
	}{
		{name: "no change", old: nodeForValidation(), new: nodeForValidation()},
		{name: "cordon and taint", old: nodeForValidation(), new: nodeForValidation(func(n *corev1.Node) { n.Spec.Unschedulable = true },
			withTaints(corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}))},
		{name: "bad taint", old: nodeForValidation(), new: nodeForValidation(withTaints(corev1.Taint{Key: "k"})),
			want: []string{"FieldValueRequired metadata.taints[0].effect"}},
		{name: "rename", old: nodeForValidation(), new: nodeForValidation(func(n *corev1.Node) { n.Name = "other" }),
			want: []string{"FieldValueInvalid metadata.name"}},

		{name: "assign pod CIDRs", old: nodeForValidation(), new: nodeForValidation(withPodCIDRs("10.0.0.0/24", "fd00::/64"))},
		{name: "change pod CIDR", old: nodeForValidation(withPodCIDRs("10.0.0.0/24")), new: nodeForValidation(withPodCIDRs("10.0.1.0/24")),
			want: []string{"FieldValueForbidden spec.podCIDRs"}},
		{name: "add second pod CIDR", old: nodeForValidation(withPodCIDRs("10.0.0.0/24")), new: nodeForValidation(withPodCIDRs("10.0.0.0/24", "fd00::/64")),
			want: []string{"FieldValueForbidden spec.podCIDRs"}},
		{name: "clear pod CIDRs", old: nodeForValidation(withPodCIDRs("10.0.0.0/24")), new: nodeForValidation(),
			want: []string{"FieldValueForbidden spec.podCIDRs"}},
		{name: "change both pod CIDRs", old: nodeForValidation(withPodCIDRs("10.0.0.0/24", "fd00::/64")), new: nodeForValidation(withPodCIDRs("10.0.1.0/24", "fd01::/64")),
			want: []string{"FieldValueForbidden spec.podCIDRs", "FieldValueForbidden spec.podCIDRs"}},

		{name: "set provider ID", old: nodeForValidation(), new: nodeForValidation(providerID("berth://node-1"))},
		{name: "change provider ID", old: nodeForValidation(providerID("a")), new: nodeForValidation(providerID("b")),
			want: []string{"FieldValueInvalid spec.providerID"}},
		{name: "clear provider ID", old: nodeForValidation(providerID("a")), new: nodeForValidation(),
			want: []string{"FieldValueInvalid spec.providerID"}},
		{name: "change external ID", old: nodeForValidation(), new: nodeForValidation(func(n *corev1.Node) { n.Spec.DoNotUseExternalID = "x" }),
			want: []string{"FieldValueForbidden spec.externalID"}},

		{name: "addresses", old: nodeForValidation(), new: nodeForValidation(addresses(internal, hostname))},
		{name: "duplicate address", old: nodeForValidation(), new: nodeForValidation(addresses(internal, hostname, internal)),
			want: []string{"FieldValueDuplicate status.addresses[2]"}},
		{name: "negative capacity", old: nodeForValidation(), new: nodeForValidation(withCapacity("cpu", "-1")),
			want: []string{"FieldValueInvalid status.capacity.cpu"}},

		{name: "config source", old: nodeForValidation(), new: nodeForValidation(specSource(goodCM))},
		{name: "config source with uid", old: nodeForValidation(), new: nodeForValidation(specSource(corev1.ConfigMapNodeConfigSource{
			Namespace: "kube-system", Name: "kubelet", KubeletConfigKey: "kubelet", UID: "u", ResourceVersion: "1"})),
			want: []string{"FieldValueForbidden spec.configSource.configMap.uid", "FieldValueForbidden spec.configSource.configMap.resourceVersion"}},
		{name: "config source incomplete", old: nodeForValidation(), new: nodeForValidation(specSource(corev1.ConfigMapNodeConfigSource{Name: "Bad"})),
			want: []string{"FieldValueRequired spec.configSource.configMap.namespace", "FieldValueInvalid spec.configSource.configMap.name",
				"FieldValueRequired spec.configSource.configMap.kubeletConfigKey"}},
		{name: "empty config source", old: nodeForValidation(), new: nodeForValidation(func(n *corev1.Node) { n.Spec.ConfigSource = &corev1.NodeConfigSource{} }),
			want: []string{"FieldValueInvalid spec.configSource"}},
		{name: "config status needs uid and resourceVersion", old: nodeForValidation(), new: nodeForValidation(func(n *corev1.Node) {
			cm := goodCM
			n.Status.Config = &corev1.NodeConfigStatus{Active: &corev1.NodeConfigSource{ConfigMap: &cm}}
		}), want: []string{"FieldValueRequired status.config.active.configMap.uid", "FieldValueRequired status.config.active.configMap.resourceVersion"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateNodeUpdate(tc.new, tc.old), tc.want)
		})
	}
}

func TestDuplicateTaintMessage(t *testing.T) {
	errs := ValidateNode(nodeForValidation(withTaints(
		corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoExecute},
		corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoExecute})))
	if len(errs) != 1 || errs[0].Detail != "taints must be unique by key and effect pair" {
		t.Errorf("unexpected errors: %v", errs)
	}
}

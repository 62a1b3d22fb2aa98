package daemonset

import (
	"fmt"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	intstrutil "k8s.io/apimachinery/pkg/util/intstr"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// TemplateGenerationLabel is the pod label of the deprecated template generation
// (extensions/v1beta1's DaemonSetTemplateGenerationKey), still honoured by upstream.
const TemplateGenerationLabel = "pod-template-generation"

// The daemon tolerations (upstream's AddOrUpdateDaemonPodTolerations): a daemon pod stays on
// a node that is not ready or unreachable, and is placed on one under disk, memory or PID
// pressure or cordoned; with host networking, also on one whose network is not up yet (the
// network plugin is often a DaemonSet itself).
func daemonTolerations(hostNetwork bool) []corev1.Toleration {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	t := []corev1.Toleration{
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
	if hostNetwork {
		t = append(t, exists(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))
	}
	return t
}

// addDaemonTolerations adds the daemon tolerations to spec, each replacing a toleration of
// the same key, operator, value and effect (upstream's AddOrUpdateTolerationInPodSpec).
func addDaemonTolerations(spec *corev1.PodSpec) {
	for _, want := range daemonTolerations(spec.HostNetwork) {
		replaced := false
		for i := range spec.Tolerations {
			if want.MatchToleration(&spec.Tolerations[i]) {
				if !apiequality.Semantic.DeepEqual(want, spec.Tolerations[i]) {
					spec.Tolerations[i] = want
				}
				replaced = true
			}
		}
		if !replaced {
			spec.Tolerations = append(spec.Tolerations, want)
		}
	}
}

// withNodeAffinity is affinity requiring the node named node (upstream's
// ReplaceDaemonSetPodNodeNameNodeAffinity): the scheduler places the pod, which gets its
// resources accounted and its preemption, rather than the controller setting nodeName.
// Existing required terms are replaced, since the node was already chosen by them.
func withNodeAffinity(affinity *corev1.Affinity, node string) *corev1.Affinity {
	selector := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
	switch {
	case affinity == nil:
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: selector}}
	case affinity.NodeAffinity == nil:
		affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: selector}
	case affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil:
		affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = selector
	default:
		affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = selector.NodeSelectorTerms
	}
	return affinity
}

// targetNode is the node a daemon pod is for: its nodeName once bound, else the node its
// metadata.name affinity requires (upstream's GetTargetNodeName).
func targetNode(pod *corev1.Pod) (string, error) {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName, nil
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", fmt.Errorf("no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution for pod %s/%s", pod.Namespace, pod.Name)
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) < 1 {
		return "", fmt.Errorf("no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod %s/%s", pod.Namespace, pod.Name)
	}
	for _, term := range terms {
		for _, exp := range term.MatchFields {
			if exp.Key == metav1.ObjectNameField && exp.Operator == corev1.NodeSelectorOpIn {
				if len(exp.Values) != 1 {
					return "", fmt.Errorf("the matchFields value of '%s' is not unique for pod %s/%s", metav1.ObjectNameField, pod.Namespace, pod.Name)
				}
				return exp.Values[0], nil
			}
		}
	}
	return "", fmt.Errorf("no node name found for pod %s/%s", pod.Namespace, pod.Name)
}

// eligibility decides which nodes a DaemonSet wants, computed once per sync.
type eligibility struct {
	nodeName    string
	tolerations []corev1.Toleration
	affinity    nodeaffinity.RequiredNodeAffinity
}

func newEligibility(ds *appsv1.DaemonSet) eligibility {
	spec := ds.Spec.Template.Spec.DeepCopy()
	addDaemonTolerations(spec)
	return eligibility{
		nodeName:    spec.NodeName,
		tolerations: spec.Tolerations,
		affinity:    nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity),
	}
}

// shouldRun is upstream's nodeShouldRunDaemonPod: shouldRun, the node should get a daemon
// pod (nodeName, node selector and required affinity match, and every NoSchedule and
// NoExecute taint is tolerated); shouldContinueRunning, a daemon pod already there may stay
// (only an untolerated NoExecute taint, or a selector mismatch, evicts it).
func (e eligibility) shouldRun(node *corev1.Node) (shouldRun, shouldContinueRunning bool) {
	if e.nodeName != "" && e.nodeName != node.Name {
		return false, false
	}
	if fits, _ := e.affinity.Match(node); !fits {
		return false, false
	}
	logger := klog.Background()
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, e.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule
	}, false)
	if !untolerated {
		return true, true
	}
	_, noExecute := corev1helpers.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, e.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return false, !noExecute
}

// templateGeneration is the DaemonSet's deprecated template generation annotation, if any.
func templateGeneration(ds *appsv1.DaemonSet) *int64 {
	v, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	if !ok {
		return nil
	}
	g, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &g
}

// isUpdated reports whether pod runs the template of hash (or of the template generation).
func isUpdated(pod *corev1.Pod, hash string, generation *int64) bool {
	if generation != nil && pod.Labels[TemplateGenerationLabel] == fmt.Sprint(*generation) {
		return true
	}
	return hash != "" && pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
}

// podTemplate is the template of ds's new pods (upstream's CreatePodTemplate): the daemon
// tolerations, the hash label and the template generation label.
func podTemplate(ds *appsv1.DaemonSet, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if g := templateGeneration(ds); g != nil {
		t.Labels[TemplateGenerationLabel] = fmt.Sprint(*g)
	}
	if hash != "" {
		t.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	}
	return t
}

// maxSurge and maxUnavailable of a rolling update over n nodes (percentages rounded up);
// both 0 for OnDelete.
func surgeCount(ds *appsv1.DaemonSet, n int) (int, error) {
	r := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || r == nil || r.MaxSurge == nil {
		return 0, nil
	}
	return intstrutil.GetScaledValueFromIntOrPercent(r.MaxSurge, n, true)
}

func unavailableCount(ds *appsv1.DaemonSet, n int) (int, error) {
	r := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || r == nil {
		return 0, nil
	}
	return intstrutil.GetScaledValueFromIntOrPercent(r.MaxUnavailable, n, true)
}

func allowsSurge(ds *appsv1.DaemonSet) bool {
	n, err := surgeCount(ds, 1)
	return err == nil && n > 0
}

// sortPods orders a node's daemon pods as upstream's podByCreationTimestampAndPhase: bound
// ones first, then oldest first, then by name. The first is the one that counts.
func sortPods(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
			return a.Spec.NodeName != ""
		}
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}

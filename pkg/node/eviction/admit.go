package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/admission"
	kubetypes "github.com/berth-cluster/berth/pkg/node/types"
	"github.com/berth-cluster/berth/pkg/qos"
)

// Admit refuses new pods while the node is under pressure, as the kubelet's eviction admit
// handler does: under memory pressure alone only BestEffort pods that do not tolerate the
// memory-pressure taint are refused; under disk or PID pressure every pod is. Critical pods
// are always admitted.
func (m *Manager) Admit(attrs *admission.PodAdmitAttributes) admission.PodAdmitResult {
	conditions := m.Conditions()
	if len(conditions) == 0 || kubetypes.IsCriticalPod(attrs.Pod) {
		return admission.PodAdmitResult{Admit: true}
	}
	if len(conditions) == 1 && conditions[0] == v1.NodeMemoryPressure {
		if qos.PodQOSClass(attrs.Pod) != v1.PodQOSBestEffort {
			return admission.PodAdmitResult{Admit: true}
		}
		taint := v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		for _, t := range attrs.Pod.Spec.Tolerations {
			if t.ToleratesTaint(klog.Background(), &taint, false) {
				return admission.PodAdmitResult{Admit: true}
			}
		}
	}
	return admission.PodAdmitResult{
		Admit:   false,
		Reason:  Reason,
		Message: fmt.Sprintf("The node had condition: %v. ", conditions),
	}
}

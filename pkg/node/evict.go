package node

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-cluster/berth/pkg/node/eviction"
	"github.com/berth-cluster/berth/pkg/node/podworkers"
	kubetypes "github.com/berth-cluster/berth/pkg/node/types"
)

// evictPod stops a pod at once (the kubelet's killPodNow with a zero grace period) and
// leaves it Failed with reason Evicted, the message, and a DisruptionTarget condition, as the
// eviction manager does.
func (kl *Kubelet) evictPod(pod *v1.Pod, message string) {
	kl.recorder.Event(pod, v1.EventTypeWarning, eviction.Reason, message)
	zero := int64(0)
	kl.podWorkers.UpdatePod(podworkers.UpdatePodOptions{
		Pod:        pod,
		UpdateType: kubetypes.SyncPodKill,
		KillPodOptions: &podworkers.KillPodOptions{
			Evict:                                    true,
			PodTerminationGracePeriodSecondsOverride: &zero,
			PodStatusFunc: func(s *v1.PodStatus) {
				s.Phase, s.Reason, s.Message = v1.PodFailed, eviction.Reason, message
				cond := v1.PodCondition{
					Type: v1.DisruptionTarget, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now(),
					Reason: "TerminationByKubelet", Message: message,
				}
				for i := range s.Conditions {
					if s.Conditions[i].Type == v1.DisruptionTarget {
						s.Conditions[i] = cond
						return
					}
				}
				s.Conditions = append(s.Conditions, cond)
			},
		},
	})
}

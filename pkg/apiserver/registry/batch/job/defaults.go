package job

import (
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
)

// SetDefaults defaults a Job as upstream's SetDefaults_Job, and its template as every pod
// template is.
func SetDefaults(j *batchv1.Job) {
	spec := &j.Spec
	// A non-parallel job may leave both unset: both are then 1.
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			// With a per-index limit, the job-wide one must not end the job first.
			spec.BackoffLimit = ptr.To[int32](math.MaxInt32)
		} else {
			spec.BackoffLimit = ptr.To[int32](6)
		}
	}
	if len(j.Labels) == 0 && spec.Template.Labels != nil {
		j.Labels = spec.Template.Labels
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.PodReplacementPolicy == nil {
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = ptr.To(false)
	}
	SetSpecDefaults(spec)
}

// SetSpecDefaults gives a job spec the defaults of its nested types (pod failure policy
// patterns, the pod template), which a CronJob's job template gets too; the Job-level ones
// (completions, backoffLimit, ...) it does not, as upstream.
func SetSpecDefaults(spec *batchv1.JobSpec) {
	if spec.PodFailurePolicy != nil {
		for i := range spec.PodFailurePolicy.Rules {
			for j := range spec.PodFailurePolicy.Rules[i].OnPodConditions {
				p := &spec.PodFailurePolicy.Rules[i].OnPodConditions[j]
				if p.Status == "" {
					p.Status = corev1.ConditionTrue
				}
			}
		}
	}
	pod.SetTemplateDefaults(&spec.Template)
}

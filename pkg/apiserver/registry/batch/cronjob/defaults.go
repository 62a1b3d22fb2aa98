package cronjob

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/batch/job"
)

// SetDefaults defaults a CronJob as upstream's SetDefaults_CronJob. Its job template gets
// only the defaults of the types nested in a job spec: the Job-level ones (completions,
// backoffLimit, ...) come when the controller creates each Job.
func SetDefaults(c *batchv1.CronJob) {
	spec := &c.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	job.SetSpecDefaults(&spec.JobTemplate.Spec)
}

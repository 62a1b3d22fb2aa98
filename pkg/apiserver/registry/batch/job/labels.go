package job

// The labels a Job's generated selector picks, besides batchv1.JobNameLabel and
// batchv1.ControllerUidLabel: the unprefixed ones older clients and controllers look for.
const (
	LegacyJobNameLabel       = "job-name"
	LegacyControllerUIDLabel = "controller-uid"
)

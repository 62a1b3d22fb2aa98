// Package job is the registry of batch/v1 Jobs: their defaults (upstream's SetDefaults_Job), the
// selector and pod labels a Job is given on create, their validation (upstream's
// pkg/apis/batch/validation for Jobs: spec, update and status rules), their strategies, table,
// field selectors and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/batch/v1/namespaces/{ns}/jobs and jobs/status. The job
// controller, which creates the pods, is not here.
package job

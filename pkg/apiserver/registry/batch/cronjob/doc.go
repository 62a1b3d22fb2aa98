// Package cronjob is the registry of batch/v1 CronJobs: their defaults (upstream's
// SetDefaults_CronJob), their validation (the schedule as robfig/cron parses it, the time
// zone, the job template as a Job's spec), their strategies, table and storage.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/batch/v1/namespaces/{ns}/cronjobs and cronjobs/status. The
// cronjob controller, which creates the Jobs, is not here.
package cronjob

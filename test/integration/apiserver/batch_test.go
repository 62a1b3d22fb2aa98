package apiserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func batchJob(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "pi", Image: "perl:5.34"}},
		}}},
	}
}

// TestBatchJobs: a created Job shows its defaults and the selector and labels generated from
// its uid; a field selector on status.successful finds it; its status is written through
// jobs/status only; a restartPolicy of Always is refused.
func TestBatchJobs(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	jobs := c.Client.BatchV1().Jobs(ns)
	j, err := jobs.Create(ctx, batchJob("pi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a Job: %v", err)
	}
	uid := string(j.UID)
	if got := metav1.FormatLabelSelector(j.Spec.Selector); got != "batch.kubernetes.io/controller-uid="+uid {
		t.Errorf("selector %s, want the controller-uid one", got)
	}
	for k, v := range map[string]string{
		"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
		"batch.kubernetes.io/job-name": "pi", "job-name": "pi",
	} {
		if j.Spec.Template.Labels[k] != v {
			t.Errorf("template label %s=%q, want %q", k, j.Spec.Template.Labels[k], v)
		}
	}
	if *j.Spec.BackoffLimit != 6 || *j.Spec.Completions != 1 || *j.Spec.Parallelism != 1 || *j.Spec.CompletionMode != batchv1.NonIndexedCompletion ||
		*j.Spec.Suspend || *j.Spec.PodReplacementPolicy != batchv1.TerminatingOrFailed || j.Generation != 1 {
		t.Errorf("defaults %+v, generation %d", j.Spec, j.Generation)
	}

	list, err := jobs.List(ctx, metav1.ListOptions{FieldSelector: "status.successful=0"})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("status.successful=0: %v, %v", list, err)
	}
	if _, err := jobs.List(ctx, metav1.ListOptions{FieldSelector: "spec.parallelism=1"}); !apierrors.IsBadRequest(err) {
		t.Errorf("an unsupported field selector: %v, want 400", err)
	}

	j.Status.Active = 1
	j.Status.StartTime = &metav1.Time{Time: j.CreationTimestamp.Time}
	j.Spec.Parallelism = ptr.To[int32](5) // the status endpoint keeps the stored spec
	updated, err := jobs.UpdateStatus(ctx, j, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating the status: %v", err)
	}
	if updated.Status.Active != 1 || *updated.Spec.Parallelism != 1 {
		t.Errorf("after jobs/status: active %d, parallelism %d; want 1 and 1", updated.Status.Active, *updated.Spec.Parallelism)
	}
	updated.Status.Active = -1
	if _, err := jobs.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); !hasCause(err, "status.active", "must be greater than or equal to 0") {
		t.Errorf("negative active: %v", err)
	}

	bad := batchJob("always")
	bad.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if _, err := jobs.Create(ctx, bad, metav1.CreateOptions{}); !hasCause(err, "spec.template.spec.restartPolicy", `valid values: "OnFailure", "Never"`) {
		t.Errorf("restartPolicy Always: %v", err)
	}
}

// TestBatchCronJobs: a CronJob is defaulted; a bad schedule is 422 naming spec.schedule.
func TestBatchCronJobs(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	cronJobs := c.Client.BatchV1().CronJobs(ns)
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Spec:       batchv1.CronJobSpec{Schedule: "*/5 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchJob("").Spec}},
	}
	created, err := cronJobs.Create(ctx, cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a CronJob: %v", err)
	}
	if created.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent || *created.Spec.SuccessfulJobsHistoryLimit != 3 || *created.Spec.FailedJobsHistoryLimit != 1 || *created.Spec.Suspend {
		t.Errorf("defaults %+v", created.Spec)
	}
	cj.Name, cj.Spec.Schedule = "bad", "every minute please"
	_, err = cronJobs.Create(ctx, cj, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !hasCause(err, "spec.schedule", "expected exactly 5 fields, found 3") {
		t.Errorf("bad schedule: %v, want 422 naming spec.schedule", err)
	}
	cj.Name, cj.Spec.Schedule = "tz", "CRON_TZ=UTC 0 * * * *"
	if _, err := cronJobs.Create(ctx, cj, metav1.CreateOptions{}); !hasCause(err, "spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead") {
		t.Errorf("CRON_TZ in the schedule: %v", err)
	}
}

func webBudget() *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "test"}},
		},
	}
}

// TestBatchPodDisruptionBudgets: a budget starts with no status, gets one through its status
// endpoint only, and refuses minAvailable with maxUnavailable. Without controllers: the
// disruption controller would write the status too.
func TestBatchPodDisruptionBudgets(t *testing.T) {
	c := quietCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	pdbs := c.Client.PolicyV1().PodDisruptionBudgets(ns)
	pdb := webBudget()
	pdb.Status.DisruptionsAllowed = 4
	created, err := pdbs.Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a budget: %v", err)
	}
	if created.Status.DisruptionsAllowed != 0 || created.Generation != 1 {
		t.Errorf("created with status %+v, generation %d", created.Status, created.Generation)
	}
	setBudgetStatus(t, ctx, c.Client, ns, 2)
	got, err := pdbs.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.Status.DisruptionsAllowed != 2 || got.Status.ObservedGeneration != 1 {
		t.Errorf("after the status update: %+v, %v", got, err)
	}
	got.Status.DisruptionsAllowed = -1
	if _, err := pdbs.UpdateStatus(ctx, got, metav1.UpdateOptions{}); !hasCause(err, "status.disruptionsAllowed", "must be greater than or equal to 0") {
		t.Errorf("negative disruptionsAllowed: %v", err)
	}
	both := webBudget()
	both.Name, both.Spec.MaxUnavailable = "both", ptr.To(intstr.FromInt32(1))
	if _, err := pdbs.Create(ctx, both, metav1.CreateOptions{}); !hasCause(err, "spec", "minAvailable and maxUnavailable cannot be both set") {
		t.Errorf("both set: %v", err)
	}
}

// setBudgetStatus plays the disruption controller, on a control plane that does not run it.
func setBudgetStatus(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string, allowed int32) {
	t.Helper()
	pdb, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: 1 + allowed, DesiredHealthy: 1, ExpectedPods: 1 + allowed,
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("setting the budget's status: %v", err)
	}
}

// TestEvictionHonoursBudget: a running, ready pod whose budget allows no disruption is not
// evicted (429 and upstream's message); with one allowed it is, and the budget records it.
// Without controllers, so that the budget's status is the test's; test/e2e runs the same
// with the disruption controller.
func TestEvictionHonoursBudget(t *testing.T) {
	c := quietCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	pods := c.Client.CoreV1().Pods(ns)
	p := simplePod("guarded")
	p.Spec.NodeName = "node-a"
	created, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("making the pod running and ready: %v", err)
	}
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, webBudget(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setBudgetStatus(t, ctx, c.Client, ns, 0)
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns}}

	err = pods.EvictV1(ctx, eviction)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting with no disruption allowed: %v, want 429", err)
	}
	status := err.(apierrors.APIStatus).Status()
	if status.Message != "Cannot evict pod as it would violate the pod's disruption budget." {
		t.Errorf("message %q", status.Message)
	}
	if status.Details == nil || !slices.ContainsFunc(status.Details.Causes, func(c metav1.StatusCause) bool {
		return c.Type == policyv1.DisruptionBudgetCause && c.Message == "The disruption budget web needs 1 healthy pods and has 1 currently"
	}) {
		t.Errorf("causes %+v, want the DisruptionBudget one", status.Details)
	}
	if pod, err := pods.Get(ctx, "guarded", metav1.GetOptions{}); err != nil || pod.DeletionTimestamp != nil {
		t.Fatalf("after a refused eviction: %v, %v", pod, err)
	}

	// A dry run spends nothing.
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: eviction.ObjectMeta, DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}); !apierrors.IsTooManyRequests(err) {
		t.Errorf("dry run with no disruption allowed: %v, want 429", err)
	}
	setBudgetStatus(t, ctx, c.Client, ns, 1)
	if err := pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: eviction.ObjectMeta, DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}); err != nil {
		t.Errorf("dry run with one disruption allowed: %v", err)
	}
	if pdb, _ := c.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{}); pdb.Status.DisruptionsAllowed != 1 {
		t.Errorf("a dry run spent the budget: %+v", pdb.Status)
	}

	if err := pods.EvictV1(ctx, eviction); err != nil {
		t.Fatalf("evicting with one disruption allowed: %v", err)
	}
	pdb, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pdb.Status.DisruptedPods["guarded"]; pdb.Status.DisruptionsAllowed != 0 || !ok {
		t.Errorf("budget after the eviction: %+v, want 0 allowed and the pod in disruptedPods", pdb.Status)
	}
	pod, err := pods.Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp == nil {
		t.Errorf("the evicted pod: %v, %v; want it terminating", pod, err)
	} else if cond := podCondition(pod, corev1.DisruptionTarget); cond == nil || cond.Reason != "EvictionByEvictionAPI" {
		t.Errorf("DisruptionTarget condition %+v", cond)
	}
}

// TestBatchTables: kubectl's tables for jobs, cronjobs and budgets have upstream's columns.
func TestBatchTables(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	if _, err := c.Client.BatchV1().Jobs(ns).Create(ctx, batchJob("tabled"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, webBudget(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string][]string{
		"/apis/batch/v1/namespaces/" + ns + "/jobs":                  {"Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"},
		"/apis/batch/v1/namespaces/" + ns + "/cronjobs":              {"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers", "Images", "Selector"},
		"/apis/policy/v1/namespaces/" + ns + "/poddisruptionbudgets": {"Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"},
	} {
		table := &metav1.Table{}
		if err := c.Client.CoreV1().RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table); err != nil {
			t.Errorf("%s as a table: %v", path, err)
			continue
		}
		var got []string
		for _, col := range table.ColumnDefinitions {
			got = append(got, col.Name)
		}
		if !equal(got, want) {
			t.Errorf("%s columns %v, want %v", path, got, want)
		}
	}
	table := &metav1.Table{}
	if err := c.Client.CoreV1().RESTClient().Get().AbsPath("/apis/batch/v1/namespaces/"+ns+"/jobs/tabled").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table); err != nil || len(table.Rows) != 1 {
		t.Fatalf("a job as a table: %v", err)
	}
	if cells := table.Rows[0].Cells; cells[0] != "tabled" || cells[1] != "Running" || cells[2] != "0/1" {
		t.Errorf("job row %v, want tabled Running 0/1", cells)
	}
}

// TestBatchDiscovery: discovery lists the new resources with upstream's short names,
// categories and subresources.
func TestBatchDiscovery(t *testing.T) {
	c := sharedCluster(t)
	for gv, want := range map[string]map[string]string{
		"batch/v1":  {"jobs": "|all", "jobs/status": "|", "cronjobs": "cj|all", "cronjobs/status": "|"},
		"policy/v1": {"poddisruptionbudgets": "pdb|", "poddisruptionbudgets/status": "|"},
	} {
		list, err := c.Client.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Errorf("discovery of %s: %v", gv, err)
			continue
		}
		got := map[string]string{}
		for _, r := range list.APIResources {
			got[r.Name] = strings.Join(r.ShortNames, ",") + "|" + strings.Join(r.Categories, ",")
		}
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s %s: short names|categories %q, want %q", gv, name, got[name], w)
			}
		}
	}
}

// hasCause reports whether err is an API error with a cause on field whose message has msg.
func hasCause(err error, field, msg string) bool {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return false
	}
	return slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool {
		return c.Field == field && contains(c.Message, msg)
	})
}

package job

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"
)

// newJob is a Job as the API server holds it after decoding: defaulted, uid set, prepared for
// create (selector generated).
func newJob(mutate ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "ns", UID: "uid-1"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "pi", Image: "perl"}}},
		}},
	}
	for _, m := range mutate {
		m(j)
	}
	SetDefaults(j)
	Strategy.PrepareForCreate(context.Background(), j)
	return j
}

func TestDefaults(t *testing.T) {
	j := &batchv1.Job{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "pi"}}}}}
	SetDefaults(j)
	s := j.Spec
	if *s.Completions != 1 || *s.Parallelism != 1 || *s.BackoffLimit != 6 || *s.CompletionMode != batchv1.NonIndexedCompletion ||
		*s.Suspend || *s.PodReplacementPolicy != batchv1.TerminatingOrFailed || *s.ManualSelector {
		t.Errorf("defaults %+v", s)
	}
	if j.Labels["app"] != "pi" {
		t.Errorf("the Job's labels default to the template's: %v", j.Labels)
	}
	if s.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("the template is not defaulted as a pod template: %+v", s.Template.Spec)
	}

	parallel := &batchv1.Job{Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](3), BackoffLimitPerIndex: ptr.To[int32](1),
		PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "X"}}}}}}}
	SetDefaults(parallel)
	p := parallel.Spec
	if p.Completions != nil || *p.Parallelism != 3 || *p.BackoffLimit != 2147483647 || *p.PodReplacementPolicy != batchv1.Failed ||
		p.PodFailurePolicy.Rules[0].OnPodConditions[0].Status != corev1.ConditionTrue {
		t.Errorf("defaults with parallelism, a per-index limit and a pod failure policy: %+v", p)
	}
}

// TestGenerateSelector: the template gets the four labels, the selector the controller-uid one.
func TestGenerateSelector(t *testing.T) {
	j := newJob()
	want := map[string]string{
		"batch.kubernetes.io/job-name": "pi", "job-name": "pi",
		"batch.kubernetes.io/controller-uid": "uid-1", "controller-uid": "uid-1",
	}
	for k, v := range want {
		if j.Spec.Template.Labels[k] != v {
			t.Errorf("template label %s = %q, want %q", k, j.Spec.Template.Labels[k], v)
		}
	}
	if got := metav1.FormatLabelSelector(j.Spec.Selector); got != "batch.kubernetes.io/controller-uid=uid-1" {
		t.Errorf("selector %s", got)
	}
	if errs := Strategy.Validate(context.Background(), j); len(errs) > 0 {
		t.Errorf("a generated Job is invalid: %v", errs)
	}
	if j.Generation != 1 {
		t.Errorf("generation %d", j.Generation)
	}

	manual := newJob(func(j *batchv1.Job) {
		j.Spec.ManualSelector = ptr.To(true)
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pi"}}
		j.Spec.Template.Labels = map[string]string{"app": "pi"}
	})
	if len(manual.Spec.Template.Labels) != 1 || len(manual.Spec.Selector.MatchLabels) != 1 {
		t.Errorf("a manual selector got generated labels: %v, %v", manual.Spec.Template.Labels, manual.Spec.Selector)
	}
	if errs := Strategy.Validate(context.Background(), manual); len(errs) > 0 {
		t.Errorf("a manual selector Job is invalid: %v", errs)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   string
	}{
		{"restartPolicy Always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			`spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
		{"pod failure policy with OnFailure", func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
		}, `spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`},
		{"negative parallelism", func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](-1) },
			"spec.parallelism: Invalid value: -1: must be greater than or equal to 0"},
		{"negative activeDeadlineSeconds", func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](-5) },
			"spec.activeDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0"},
		{"negative ttlSecondsAfterFinished", func(j *batchv1.Job) { j.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1) },
			"spec.ttlSecondsAfterFinished: Invalid value: -1"},
		{"Indexed without completions", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Parallelism = ptr.To[int32](2)
		}, "spec.completions: Required value: when completion mode is Indexed"},
		{"unknown completion mode", func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To[batchv1.CompletionMode]("Sometimes") },
			`spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"`},
		{"backoffLimitPerIndex on NonIndexed", func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](1) },
			"spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"},
		{"maxFailedIndexes without backoffLimitPerIndex", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.MaxFailedIndexes = ptr.To[int32](1)
		}, "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified"},
		{"maxFailedIndexes above completions", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To[int32](2)
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
			j.Spec.MaxFailedIndexes = ptr.To[int32](3)
		}, "spec.maxFailedIndexes: Invalid value: 3: must be less than or equal to completions"},
		{"pod failure policy rule without requirement", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore}}}
		}, "spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required"},
		{"FailIndex without backoffLimitPerIndex", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailIndex, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget", Status: corev1.ConditionTrue}}}}}
		}, `spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`},
		{"exit codes unordered, 0 for In", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{2, 0}}}}}
		}, "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [2,0]: must be ordered"},
		{"unknown container in onExitCodes", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To("other"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
		}, `spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "other": must be one of the container or initContainer names in the pod template`},
		{"pod replacement TerminatingOrFailed with a pod failure policy", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}, `spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed"`},
		{"success policy on NonIndexed", func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
		}, "spec.successPolicy: Invalid value: {\"rules\":[{\"succeededCount\":1}]}: requires indexed completion mode"},
		{"success policy indexes out of range", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To[int32](3)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0-5")}}}
		}, `spec.successPolicy.rules[0].succeededIndexes: Invalid value: "0-5": error parsing succeededIndexes: too large index: "5"`},
		{"bad managedBy", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("not a path") },
			`spec.managedBy: Invalid value: "not a path"`},
		{"Indexed name too long for pod hostnames", func(j *batchv1.Job) {
			j.Name = strings.Repeat("a", 62)
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.Completions = ptr.To[int32](10)
		}, "metadata.name: Invalid value: \"" + strings.Repeat("a", 62) + "\": will not able to create pod with invalid DNS label: " + strings.Repeat("a", 62) + "-9"},
		{"template label contradicts the generated selector", func(j *batchv1.Job) {
			j.Spec.Template.Labels = map[string]string{"controller-uid": "other"}
		}, "spec.template.metadata.labels[controller-uid]: Invalid value"},
		{"selector not matching the template", func(j *batchv1.Job) {
			j.Spec.ManualSelector = ptr.To(true)
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
			j.Spec.Template.Labels = map[string]string{"app": "b"}
		}, "spec.template.metadata.labels: Invalid value: {\"app\":\"b\"}: `selector` does not match template `labels`"},
		{"manual selector missing", func(j *batchv1.Job) { j.Spec.ManualSelector = ptr.To(true) },
			"spec.selector: Required value"},
		{"container as a pod's", func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "" },
			"spec.template.spec.containers[0].image: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(tt.mutate)
			got := Strategy.Validate(context.Background(), j).ToAggregate()
			if got == nil || !strings.Contains(got.Error(), tt.want) {
				t.Errorf("errors %v\nwant one with %q", got, tt.want)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	ctx := context.Background()
	update := func(old *batchv1.Job, mutate func(*batchv1.Job)) field.ErrorList {
		j := old.DeepCopy()
		j.ResourceVersion = "2"
		mutate(j)
		Strategy.PrepareForUpdate(ctx, j, old)
		return Strategy.ValidateUpdate(ctx, j, old)
	}
	running := newJob()
	running.ResourceVersion = "1"
	if errs := update(running, func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "perl:2" }); len(errs) == 0 ||
		!strings.Contains(errs.ToAggregate().Error(), "spec.template: Invalid value") || !strings.Contains(errs.ToAggregate().Error(), "field is immutable") {
		t.Errorf("changing a running Job's image: %v, want spec.template immutable", errs)
	}
	if errs := update(running, func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](5) }); !strings.Contains(errs.ToAggregate().Error(), "spec.completions: Invalid value: 5: field is immutable") {
		t.Errorf("changing a NonIndexed Job's completions: %v", errs)
	}
	if errs := update(running, func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](4); j.Spec.Suspend = ptr.To(true) }); len(errs) > 0 {
		t.Errorf("changing parallelism and suspend: %v", errs)
	}
	if errs := update(running, func(j *batchv1.Job) { j.Spec.Selector.MatchLabels["x"] = "y" }); !strings.Contains(errs.ToAggregate().Error(), "spec.selector: Invalid value") {
		t.Errorf("changing the selector: %v", errs)
	}

	suspended := newJob(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
	suspended.ResourceVersion = "1"
	if errs := update(suspended, func(j *batchv1.Job) {
		j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
		j.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: mustQuantity("1")}
	}); len(errs) > 0 {
		t.Errorf("a suspended, never started Job's scheduling directives and resources: %v", errs)
	}
	if errs := update(suspended, func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "perl:2" }); len(errs) == 0 {
		t.Error("a suspended Job's image changed")
	}

	indexed := newJob(func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](3), ptr.To[int32](3)
	})
	indexed.ResourceVersion = "1"
	if errs := update(indexed, func(j *batchv1.Job) { j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](5), ptr.To[int32](5) }); len(errs) > 0 {
		t.Errorf("elastic Indexed Job scaled: %v", errs)
	}
	if errs := update(indexed, func(j *batchv1.Job) { j.Spec.Completions = ptr.To[int32](5) }); !strings.Contains(errs.ToAggregate().Error(), "spec.completions: Invalid value: 5: can only be modified in tandem with spec.parallelism") {
		t.Errorf("Indexed completions alone: %v", errs)
	}

	before := running.Generation
	j := running.DeepCopy()
	j.Status.Active = 3
	j.Spec.Parallelism = ptr.To[int32](2)
	Strategy.PrepareForUpdate(ctx, j, running)
	if j.Status.Active != 0 || j.Generation != before+1 {
		t.Errorf("an update kept status %+v / generation %d, want the stored status and %d", j.Status, j.Generation, before+1)
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	ctx := context.Background()
	old := newJob(func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions, j.Spec.Parallelism = ptr.To[int32](4), ptr.To[int32](2)
	})
	old.ResourceVersion = "1"
	old.Status.Succeeded = 2
	now := metav1.Now()
	tests := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   string
	}{
		{"valid", func(j *batchv1.Job) {
			j.Status.Active, j.Status.StartTime, j.Status.CompletedIndexes = 2, &now, "0,2-3"
			j.Status.Succeeded = 3
		}, ""},
		{"negative active", func(j *batchv1.Job) { j.Status.Active = -1 }, "status.active: Invalid value: -1: must be greater than or equal to 0"},
		{"bad completedIndexes", func(j *batchv1.Job) { j.Status.CompletedIndexes = "1,0" },
			`status.completedIndexes: Invalid value: "1,0": error parsing completedIndexes: non-increasing order, previous: 1, current: 0`},
		{"index beyond completions", func(j *batchv1.Job) { j.Status.CompletedIndexes = "7" },
			`status.completedIndexes: Invalid value: "7": error parsing completedIndexes: too large index: "7"`},
		{"decreasing succeeded", func(j *batchv1.Job) { j.Status.Succeeded = 1 }, "status.succeeded: Invalid value: 1: cannot decrease the succeeded counter"},
		{"more ready than active", func(j *batchv1.Job) { j.Status.Ready = ptr.To[int32](1) }, "status.ready: Invalid value: 1: cannot set more ready pods than active"},
		{"Complete without SuccessCriteriaMet", func(j *batchv1.Job) {
			j.Status.StartTime, j.Status.CompletionTime = &now, &now
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		}, "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition"},
		{"failedIndexes without backoffLimitPerIndex", func(j *batchv1.Job) { j.Status.FailedIndexes = ptr.To("1") },
			`status.failedIndexes: Invalid value: "1": cannot set non-null failedIndexes when backoffLimitPerIndex is null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := old.DeepCopy()
			j.ResourceVersion = "2"
			tt.mutate(j)
			j.Spec.Parallelism = ptr.To[int32](9) // the status endpoint keeps the stored spec
			StatusStrategy.PrepareForUpdate(ctx, j, old)
			if *j.Spec.Parallelism != 2 {
				t.Fatalf("the status update changed the spec")
			}
			errs := StatusStrategy.ValidateUpdate(ctx, j, old).ToAggregate()
			switch {
			case tt.want == "" && errs != nil:
				t.Errorf("unexpected errors %v", errs)
			case tt.want != "" && (errs == nil || !strings.Contains(errs.Error(), tt.want)):
				t.Errorf("errors %v\nwant one with %q", errs, tt.want)
			}
		})
	}
}

func TestGarbageCollectionPolicy(t *testing.T) {
	batchCtx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{APIGroup: "batch", APIVersion: "v1"})
	if got := Strategy.DefaultGarbageCollectionPolicy(batchCtx); got != rest.OrphanDependents {
		t.Errorf("batch/v1 deletes: %v, want OrphanDependents as upstream", got)
	}
	if got := Strategy.DefaultGarbageCollectionPolicy(context.Background()); got != rest.DeleteDependents {
		t.Errorf("other callers: %v, want DeleteDependents", got)
	}
}

func TestFields(t *testing.T) {
	j := newJob()
	j.Status.Succeeded = 2
	f := Fields(j)
	if f["status.successful"] != "2" || f["metadata.name"] != "pi" || f["metadata.namespace"] != "ns" {
		t.Errorf("fields %v", f)
	}
}

func TestParseIndexes(t *testing.T) {
	tests := []struct {
		in    string
		total int32
		err   string
	}{
		{"", 0, ""},
		{"0,2-4,9", 5, ""},
		{"1-1", 0, "non-increasing order, previous: 1, current: 1"},
		{"0-1-2", 0, `the fragment "0-1-2" violates the requirement that an index interval can have at most two parts separated by '-'`},
		{"a", 0, `cannot convert string to integer for index: "a"`},
		{"3,3", 0, "non-increasing order, previous: 3, current: 3"},
		{"10", 0, `too large index: "10"`},
	}
	for _, tt := range tests {
		total, err := parseIndexes(tt.in, 10)
		if (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) || total != tt.total {
			t.Errorf("parseIndexes(%q) = %d, %v; want %d, %q", tt.in, total, err, tt.total, tt.err)
		}
	}
	if err := indexesOverlap("0-3,7", "4-6,7", 10); err == nil || err.Error() != "failedIndexes and completedIndexes overlap at index: 7" {
		t.Errorf("overlap: %v", err)
	}
	if err := indexesOverlap("0-3", "4-6", 10); err != nil {
		t.Errorf("no overlap: %v", err)
	}
}

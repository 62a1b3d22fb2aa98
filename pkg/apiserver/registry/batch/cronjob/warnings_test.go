package cronjob

import (
	"context"
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// TestWarnings: the job template's pod template warns at spec.jobTemplate.spec.template, after
// the name; on update only when the spec changed.
func TestWarnings(t *testing.T) {
	ctx := context.Background()
	const selectorWarning = `spec.jobTemplate.spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`
	c := newCronJob(func(c *batchv1.CronJob) {
		c.Name = "hello.v1"
		c.Spec.JobTemplate.Spec.Template.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux"}
	})
	want := []string{
		`metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]`,
		selectorWarning,
	}
	if got := Strategy.WarningsOnCreate(ctx, c); !reflect.DeepEqual(got, want) {
		t.Errorf("create warnings:\n got %q\nwant %q", got, want)
	}

	Strategy.PrepareForCreate(ctx, c)
	relabelled := c.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "batch"}
	Strategy.PrepareForUpdate(ctx, relabelled, c)
	if got := Strategy.WarningsOnUpdate(ctx, relabelled, c); len(got) != 0 {
		t.Errorf("an update that left the spec alone warned: %q", got)
	}
	rescheduled := c.DeepCopy()
	rescheduled.Spec.Schedule = "*/5 * * * *"
	Strategy.PrepareForUpdate(ctx, rescheduled, c)
	if got := Strategy.WarningsOnUpdate(ctx, rescheduled, c); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("update warnings %q", got)
	}
}

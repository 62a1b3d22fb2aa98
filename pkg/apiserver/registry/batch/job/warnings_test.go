package job

import (
	"context"
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
)

// TestWarnings: upstream's order (the name's, the Indexed Job's size, the template's at
// spec.template); on update the spec's only when it changed.
func TestWarnings(t *testing.T) {
	ctx := context.Background()
	const selectorWarning = `spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`
	j := newJob(func(j *batchv1.Job) {
		j.Name = "pi.v1"
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions = ptr.To[int32](200_000)
		j.Spec.Parallelism = ptr.To[int32](20_000)
		j.Spec.Template.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux"}
	})
	sizeWarning := `spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail`
	want := []string{
		`metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]`,
		sizeWarning,
		selectorWarning,
	}
	if got := Strategy.WarningsOnCreate(ctx, j); !reflect.DeepEqual(got, want) {
		t.Errorf("create warnings:\n got %q\nwant %q", got, want)
	}

	relabelled := j.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "batch"}
	Strategy.PrepareForUpdate(ctx, relabelled, j)
	if got := Strategy.WarningsOnUpdate(ctx, relabelled, j); len(got) != 0 {
		t.Errorf("an update that left the spec alone warned: %q", got)
	}
	suspended := j.DeepCopy()
	suspended.Spec.Suspend = ptr.To(true)
	Strategy.PrepareForUpdate(ctx, suspended, j)
	if got := Strategy.WarningsOnUpdate(ctx, suspended, j); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("update warnings:\n got %q\nwant %q", got, want[1:])
	}
}

package deployment

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/utils/ptr"
)

// TestWarnings: a create warns of the name, then of the template at spec.template, as
// upstream; an update warns of the template only when it moved the generation; a status
// write warns of nothing.
func TestWarnings(t *testing.T) {
	ctx := context.Background()
	const selectorWarning = `spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`
	d := valid()
	d.Name = "web.v1"
	d.Spec.Template.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux"}
	want := []string{
		`metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]`,
		selectorWarning,
	}
	if got := Strategy.WarningsOnCreate(ctx, d); !reflect.DeepEqual(got, want) {
		t.Errorf("create warnings:\n got %q\nwant %q", got, want)
	}

	old := d.DeepCopy()
	old.Generation = 1
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "front"}
	Strategy.PrepareForUpdate(ctx, relabelled, old)
	if got := Strategy.WarningsOnUpdate(ctx, relabelled, old); len(got) != 0 {
		t.Errorf("an update that left the spec alone warned: %q", got)
	}
	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	Strategy.PrepareForUpdate(ctx, scaled, old)
	if got := Strategy.WarningsOnUpdate(ctx, scaled, old); !reflect.DeepEqual(got, []string{selectorWarning}) {
		t.Errorf("update warnings %q, want the template's only", got)
	}
	if got := StatusStrategy.WarningsOnUpdate(ctx, scaled, old); len(got) != 0 {
		t.Errorf("a status write warned: %q", got)
	}
}

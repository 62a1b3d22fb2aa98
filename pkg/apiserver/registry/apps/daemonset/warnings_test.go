package daemonset

import (
	"context"
	"reflect"
	"testing"
)

// TestWarnings: a create warns of the template at spec.template; an update only when it
// changed the template (moved the template generation), not for the rest of the spec; a
// status write never.
func TestWarnings(t *testing.T) {
	ctx := context.Background()
	const selectorWarning = `spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`
	ds := valid()
	ds.Name = "agent.v1" // DaemonSets get no name warning upstream
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux"}
	if got := Strategy.WarningsOnCreate(ctx, ds); !reflect.DeepEqual(got, []string{selectorWarning}) {
		t.Errorf("create warnings %q", got)
	}

	old := ds.DeepCopy()
	Strategy.PrepareForCreate(ctx, old)
	slower := old.DeepCopy()
	slower.Spec.MinReadySeconds = 30
	Strategy.PrepareForUpdate(ctx, slower, old)
	if slower.Generation == old.Generation {
		t.Fatal("a spec change did not move the generation")
	}
	if got := Strategy.WarningsOnUpdate(ctx, slower, old); len(got) != 0 {
		t.Errorf("an update that left the template alone warned: %q", got)
	}
	retemplated := old.DeepCopy()
	retemplated.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	Strategy.PrepareForUpdate(ctx, retemplated, old)
	if got := Strategy.WarningsOnUpdate(ctx, retemplated, old); !reflect.DeepEqual(got, []string{selectorWarning}) {
		t.Errorf("update warnings %q", got)
	}
	if got := StatusStrategy.WarningsOnUpdate(ctx, retemplated, old); len(got) != 0 {
		t.Errorf("a status write warned: %q", got)
	}
}

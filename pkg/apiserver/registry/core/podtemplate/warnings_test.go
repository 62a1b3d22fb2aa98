package podtemplate

import (
	"context"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWarnings: the template's warnings at "template", on create and on an update that
// changed it (moved the generation) only.
func TestWarnings(t *testing.T) {
	ctx := context.Background()
	pt := template()
	pt.Template.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}
	want := []string{`template.metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: deprecated since v1.30; use the "appArmorProfile" field instead`}
	if got := Strategy.WarningsOnCreate(ctx, pt); !reflect.DeepEqual(got, want) {
		t.Errorf("create warnings %q", got)
	}
	Strategy.PrepareForCreate(ctx, pt)
	relabelled := pt.DeepCopy()
	relabelled.ObjectMeta = metav1.ObjectMeta{Name: pt.Name, Namespace: pt.Namespace, Labels: map[string]string{"a": "b"}, Generation: pt.Generation}
	Strategy.PrepareForUpdate(ctx, relabelled, pt)
	if got := Strategy.WarningsOnUpdate(ctx, relabelled, pt); len(got) != 0 {
		t.Errorf("an update that left the template alone warned: %q", got)
	}
	changed := pt.DeepCopy()
	changed.Template.Spec.Containers[0].Image = "busybox:2"
	Strategy.PrepareForUpdate(ctx, changed, pt)
	if got := Strategy.WarningsOnUpdate(ctx, changed, pt); !reflect.DeepEqual(got, want) {
		t.Errorf("update warnings %q", got)
	}
}

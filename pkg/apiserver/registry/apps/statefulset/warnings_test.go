package statefulset

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestWarnings: upstream's order (the template's, the claim templates', the history limit's),
// and upstream's two spellings of a claim template's path; on update the template's only when
// the spec changed, the others always.
func TestWarnings(t *testing.T) {
	ctx := context.Background()
	const (
		selectorWarning = `spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`
		historyWarning  = `spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended`
	)
	s := valid()
	s.Generation = 1
	s.Spec.Template.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux"}
	s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("1500m")
	s.Spec.RevisionHistoryLimit = ptr.To[int32](-1)
	want := []string{
		selectorWarning,
		`spec.volumeClaimTemplates[0].resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
		historyWarning,
	}
	if got := Strategy.WarningsOnCreate(ctx, s); !reflect.DeepEqual(got, want) {
		t.Errorf("create warnings:\n got %q\nwant %q", got, want)
	}

	relabelled := s.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "db"}
	Strategy.PrepareForUpdate(ctx, relabelled, s)
	want = []string{
		`spec.volumeClaimTemplates[0].Spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
		historyWarning,
	}
	if got := Strategy.WarningsOnUpdate(ctx, relabelled, s); !reflect.DeepEqual(got, want) {
		t.Errorf("update warnings without a spec change:\n got %q\nwant %q", got, want)
	}
	scaled := s.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](3)
	Strategy.PrepareForUpdate(ctx, scaled, s)
	want = append([]string{selectorWarning}, want...)
	if got := Strategy.WarningsOnUpdate(ctx, scaled, s); !reflect.DeepEqual(got, want) {
		t.Errorf("update warnings:\n got %q\nwant %q", got, want)
	}
	if got := StatusStrategy.WarningsOnUpdate(ctx, scaled, s); len(got) != 0 {
		t.Errorf("a status write warned: %q", got)
	}
}

package scheme

import (
	"reflect"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAutoscaling: autoscaling/v2 is preferred, its HorizontalPodAutoscaler is the group's
// internal one, and v1's Scale stays the internal Scale.
func TestAutoscaling(t *testing.T) {
	if got := Scheme.PrioritizedVersionsForGroup(autoscalingv1.GroupName); !reflect.DeepEqual(got, []schema.GroupVersion{autoscalingv2.SchemeGroupVersion, autoscalingv1.SchemeGroupVersion}) {
		t.Errorf("autoscaling priorities %v, want v2, v1", got)
	}
	internal := schema.GroupVersion{Group: autoscalingv1.GroupName, Version: runtime.APIVersionInternal}
	for kind, want := range map[string]any{
		"HorizontalPodAutoscaler":     &autoscalingv2.HorizontalPodAutoscaler{},
		"HorizontalPodAutoscalerList": &autoscalingv2.HorizontalPodAutoscalerList{},
		"Scale":                       &autoscalingv1.Scale{},
	} {
		obj, err := Scheme.New(internal.WithKind(kind))
		if err != nil {
			t.Errorf("internal %s: %v", kind, err)
			continue
		}
		if reflect.TypeOf(obj) != reflect.TypeOf(want) {
			t.Errorf("internal %s is %T, want %T", kind, obj, want)
		}
	}
	for _, gv := range []schema.GroupVersion{autoscalingv1.SchemeGroupVersion, autoscalingv2.SchemeGroupVersion} {
		if !External.Recognizes(gv.WithKind("HorizontalPodAutoscaler")) {
			t.Errorf("External does not know %s HorizontalPodAutoscaler", gv)
		}
	}
}

package scale

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"
)

// The tests use an RC as the workload: the package knows no kind of its own.
var target = Target[*corev1.ReplicationController]{
	Resource:     corev1.Resource("replicationcontrollers"),
	GroupVersion: corev1.SchemeGroupVersion,
	Replicas: func(rc *corev1.ReplicationController) (int32, int32, string, error) {
		return *rc.Spec.Replicas, rc.Status.Replicas, labels.SelectorFromSet(rc.Spec.Selector).String(), nil
	},
	SetReplicas: func(rc *corev1.ReplicationController, n int32) { rc.Spec.Replicas = &n },
}

func stored() *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", ResourceVersion: "7", Labels: map[string]string{"a": "b"}},
		Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](1), Selector: map[string]string{"app": "web"}},
		Status:     corev1.ReplicationControllerStatus{Replicas: 1},
	}
}

// update runs one write of a Scale through the transformation the store calls.
func update(t *testing.T, old runtime.Object, with func(s *autoscalingv1.Scale) runtime.Object) (runtime.Object, error) {
	t.Helper()
	r := NewREST(nil, target)
	info := &updatedObjectInfo[*corev1.ReplicationController]{name: "web", rest: r,
		request: rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, newObj, oldObj runtime.Object) (runtime.Object, error) {
			return with(oldObj.(*autoscalingv1.Scale).DeepCopy()), nil
		})}
	return info.UpdatedObject(context.Background(), old)
}

func TestUpdatedObject(t *testing.T) {
	old := stored()
	got, err := update(t, old, func(s *autoscalingv1.Scale) runtime.Object {
		if s.Name != "web" || s.UID != "uid-1" || s.ResourceVersion != "7" || s.Spec.Replicas != 1 || s.Status.Selector != "app=web" {
			t.Errorf("the stored RC as a Scale: %+v", s)
		}
		s.Spec.Replicas = 3
		s.ResourceVersion = "6"
		s.Labels = map[string]string{"ignored": "yes"}
		return s
	})
	if err != nil {
		t.Fatal(err)
	}
	rc := got.(*corev1.ReplicationController)
	// The Scale's resourceVersion becomes the store's precondition; nothing else of its
	// metadata is taken.
	if *rc.Spec.Replicas != 3 || rc.ResourceVersion != "6" || rc.Labels["a"] != "b" || rc.Labels["ignored"] != "" {
		t.Errorf("after the write: replicas %d, rv %s, labels %v", *rc.Spec.Replicas, rc.ResourceVersion, rc.Labels)
	}
	if *old.Spec.Replicas != 1 {
		t.Errorf("the stored object was changed in place")
	}
}

func TestUpdatedObjectRefusals(t *testing.T) {
	tests := []struct {
		name  string
		old   runtime.Object
		with  func(s *autoscalingv1.Scale) runtime.Object
		check func(error) bool
		want  string
	}{
		{"negative", stored(), func(s *autoscalingv1.Scale) runtime.Object { s.Spec.Replicas = -1; return s },
			apierrors.IsInvalid, "spec.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{"other UID", stored(), func(s *autoscalingv1.Scale) runtime.Object { s.UID = "uid-2"; return s },
			apierrors.IsConflict, "Precondition failed: UID in precondition: uid-2, UID in object meta: uid-1"},
		{"not a Scale", stored(), func(*autoscalingv1.Scale) runtime.Object { return &corev1.Pod{} },
			apierrors.IsBadRequest, "expected input object type to be Scale"},
		{"nothing stored", &corev1.ReplicationController{}, func(s *autoscalingv1.Scale) runtime.Object { return s },
			apierrors.IsNotFound, `replicationcontrollers/scale "web" not found`},
		{"another kind stored", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1"}}, func(s *autoscalingv1.Scale) runtime.Object { return s },
			apierrors.IsBadRequest, "expected a replicationcontrollers object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := update(t, tt.old, tt.with)
			if !tt.check(err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestAdmissionSeesScales: admission is handed the Scale, not the workload.
func TestAdmissionSeesScales(t *testing.T) {
	r := NewREST(nil, target)
	var seen []runtime.Object
	validate := r.updateValidation(func(_ context.Context, obj, old runtime.Object) error {
		seen = append(seen, obj, old)
		return nil
	})
	changed := stored()
	changed.Spec.Replicas = ptr.To[int32](2)
	if err := validate(context.Background(), changed, stored()); err != nil {
		t.Fatal(err)
	}
	n, o := seen[0].(*autoscalingv1.Scale), seen[1].(*autoscalingv1.Scale)
	if n.Spec.Replicas != 2 || o.Spec.Replicas != 1 {
		t.Errorf("admission saw %+v and %+v", n.Spec, o.Spec)
	}
	if gvk := r.GroupVersionKind(corev1.SchemeGroupVersion); gvk.String() != "autoscaling/v1, Kind=Scale" {
		t.Errorf("kind %s", gvk)
	}
}

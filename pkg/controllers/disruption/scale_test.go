package disruption

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	fakediscovery "k8s.io/client-go/discovery/fake"
	scalefake "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
)

var thingKind = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}

// withScales gives the fixture's controller a scale client answering for Things, and a
// discovery that lists things/scale when listed is set.
func withScales(f *fixture, scale *autoscalingv1.Scale, listed bool) *scalefake.FakeScaleClient {
	mapper := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{thingKind.GroupVersion()})
	mapper.Add(thingKind, apimeta.RESTScopeNamespace)
	scales := &scalefake.FakeScaleClient{}
	scales.AddReactor("get", "things", func(clienttesting.Action) (bool, runtime.Object, error) {
		if scale == nil {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "things"}, "thing")
		}
		return true, scale, nil
	})
	f.c.Scales, f.c.Mapper = scales, mapper
	resources := &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "things", Kind: "Thing"}}}
	if listed {
		resources.APIResources = append(resources.APIResources,
			metav1.APIResource{Name: "things/scale", Group: "autoscaling", Version: "v1", Kind: "Scale"})
	}
	f.client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{resources}
	return scales
}

func TestScaleSubresource(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "thing", UID: "thing-uid"}
	newF := func() *fixture {
		return newFixture(t, budget(maxUnavailable(intstr.FromString("50%"))),
			pod("a", true, owner, thingKind)) // one pod: the cache lists in no set order
	}

	t.Run("counted", func(t *testing.T) {
		f := newF()
		withScales(f, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{UID: "thing-uid"}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}, true)
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
		if s := f.written().Status; s.ExpectedPods != 4 || s.DesiredHealthy != 2 || s.CurrentHealthy != 1 || s.DisruptionsAllowed != 0 {
			t.Errorf("status %+v", s)
		}
	})
	t.Run("namesake", func(t *testing.T) {
		f := newF()
		withScales(f, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{UID: "other"}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}, true)
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
		assertSyncFailed(t, f, `found no controllers for pod "a"`)
	})
	t.Run("no scale subresource", func(t *testing.T) {
		f := newF()
		withScales(f, nil, false)
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
		assertSyncFailed(t, f, "things.example.com does not implement the scale subresource")
	})
	t.Run("controller gone", func(t *testing.T) {
		f := newF()
		withScales(f, nil, true)
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
		assertSyncFailed(t, f, `found no controllers for pod "a"`)
	})
}

func assertSyncFailed(t *testing.T, f *fixture, message string) {
	t.Helper()
	pdb := f.written()
	if pdb == nil {
		t.Fatal("no fail-safe status written")
	}
	c := apimeta.FindStatusCondition(pdb.Status.Conditions, "DisruptionAllowed")
	if c == nil || c.Reason != "SyncFailed" || c.Message != message {
		t.Fatalf("condition %+v, want SyncFailed %q", c, message)
	}
}

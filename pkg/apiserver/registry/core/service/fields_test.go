package service

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func TestFields(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.10"},
	}
	got := Fields(svc)
	want := fields.Set{"metadata.name": "web", "metadata.namespace": "shop", "spec.clusterIP": "10.96.0.10", "spec.type": "NodePort"}
	if len(got) != len(want) {
		t.Fatalf("Fields = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Fields[%s] = %q, want %q", k, got[k], v)
		}
	}
	for sel, match := range map[string]bool{
		"spec.type=NodePort":                   true,
		"spec.type!=ClusterIP":                 true,
		"spec.clusterIP=10.96.0.10":            true,
		"spec.clusterIP=None":                  false,
		"metadata.name=web,spec.type=NodePort": true,
	} {
		s, err := fields.ParseSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		if s.Matches(got) != match {
			t.Errorf("selector %q matches = %v, want %v", sel, !match, match)
		}
	}
}

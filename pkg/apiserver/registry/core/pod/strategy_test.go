package pod

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheckGracefulDelete(t *testing.T) {
	thirty := int64(30)
	five := int64(5)
	minus := int64(-1)
	tests := []struct {
		name    string
		node    string
		phase   corev1.PodPhase
		options *int64
		want    int64
	}{
		{"bound, pod's period", "n", corev1.PodRunning, nil, 30},
		{"bound, caller's period", "n", corev1.PodRunning, &five, 5},
		{"unbound goes at once", "", corev1.PodPending, &five, 0},
		{"succeeded goes at once", "n", corev1.PodSucceeded, nil, 0},
		{"failed goes at once", "n", corev1.PodFailed, nil, 0},
		{"negative becomes 1", "n", corev1.PodRunning, &minus, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{
				Spec:   corev1.PodSpec{NodeName: tt.node, TerminationGracePeriodSeconds: &thirty},
				Status: corev1.PodStatus{Phase: tt.phase},
			}
			opts := &metav1.DeleteOptions{GracePeriodSeconds: tt.options}
			if !Strategy.CheckGracefulDelete(context.Background(), pod, opts) {
				t.Fatal("CheckGracefulDelete = false")
			}
			if *opts.GracePeriodSeconds != tt.want {
				t.Errorf("grace period %d, want %d", *opts.GracePeriodSeconds, tt.want)
			}
		})
	}
}

func TestPrepareForCreate(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "rev": "2"}},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "wait"}},
			Containers:      []corev1.Container{{Name: "c"}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				MatchLabelKeys: []string{"rev", "absent"},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "1.2.3.4"},
	}
	Strategy.PrepareForCreate(context.Background(), pod)
	if pod.Status.Phase != corev1.PodPending || pod.Status.PodIP != "" || pod.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("status %+v, want a fresh Pending BestEffort status", pod.Status)
	}
	if len(pod.Status.Conditions) != 1 || pod.Status.Conditions[0].Reason != corev1.PodReasonSchedulingGated {
		t.Errorf("conditions %+v, want PodScheduled=False SchedulingGated", pod.Status.Conditions)
	}
	exprs := pod.Spec.TopologySpreadConstraints[0].LabelSelector.MatchExpressions
	if len(exprs) != 1 || exprs[0].Key != "rev" || exprs[0].Values[0] != "2" || exprs[0].Operator != metav1.LabelSelectorOpIn {
		t.Errorf("matchLabelKeys merged into %+v, want rev In (2)", exprs)
	}
	if pod.Generation != 1 {
		t.Errorf("generation %d, want 1", pod.Generation)
	}
}

func TestFields(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:       corev1.PodSpec{NodeName: "n", SchedulerName: "s"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}},
	}
	f := Fields(pod)
	for k, want := range map[string]string{
		"metadata.name": "p", "metadata.namespace": "ns", "spec.nodeName": "n", "spec.schedulerName": "s",
		"status.phase": "Running", "status.podIP": "10.0.0.1", "spec.hostNetwork": "false",
	} {
		if f[k] != want {
			t.Errorf("%s = %q, want %q", k, f[k], want)
		}
	}
}

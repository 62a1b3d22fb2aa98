package event

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func TestFieldsSource(t *testing.T) {
	tests := []struct {
		name      string
		source    corev1.EventSource
		reporting string
		want      string
	}{
		{name: "core/v1 source.component", source: corev1.EventSource{Component: "kubelet", Host: "n1"}, want: "kubelet"},
		{name: "events.k8s.io reportingController", reporting: "test-controller", want: "test-controller"},
		{name: "source.component wins", source: corev1.EventSource{Component: "kubelet"}, reporting: "berth.dev/node-agent", want: "kubelet"},
		{name: "neither", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &corev1.Event{
				ObjectMeta:          metav1.ObjectMeta{Name: "e", Namespace: "ns"},
				Source:              tc.source,
				ReportingController: tc.reporting,
			}
			set := Fields(e)
			if got := set["source"]; got != tc.want {
				t.Errorf(`Fields()["source"] = %q, want %q`, got, tc.want)
			}
			if got := set["reportingComponent"]; got != tc.reporting {
				t.Errorf(`Fields()["reportingComponent"] = %q, want %q`, got, tc.reporting)
			}
			if tc.want != "" && !fields.OneTermEqualSelector("source", tc.want).Matches(set) {
				t.Errorf("source=%s does not match %v", tc.want, set)
			}
		})
	}
}

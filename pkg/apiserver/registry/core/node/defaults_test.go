package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestSetDefaultsPodCIDRs(t *testing.T) {
	tests := []struct {
		name      string
		cidr      string
		cidrs     []string
		wantCIDR  string
		wantCIDRs []string
	}{
		{name: "neither"},
		{name: "only podCIDR", cidr: "10.0.1.0/24", wantCIDR: "10.0.1.0/24", wantCIDRs: []string{"10.0.1.0/24"}},
		{name: "only podCIDRs", cidrs: []string{"10.0.1.0/24", "fd00::/64"}, wantCIDR: "10.0.1.0/24", wantCIDRs: []string{"10.0.1.0/24", "fd00::/64"}},
		{name: "agree", cidr: "10.0.1.0/24", cidrs: []string{"10.0.1.0/24", "fd00::/64"}, wantCIDR: "10.0.1.0/24", wantCIDRs: []string{"10.0.1.0/24", "fd00::/64"}},
		{name: "disagree: podCIDR wins", cidr: "10.0.2.0/24", cidrs: []string{"10.0.1.0/24", "fd00::/64"}, wantCIDR: "10.0.2.0/24", wantCIDRs: []string{"10.0.2.0/24"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Spec: corev1.NodeSpec{PodCIDR: tc.cidr, PodCIDRs: tc.cidrs}}
			SetDefaults(n)
			if n.Spec.PodCIDR != tc.wantCIDR || !apiequality.Semantic.DeepEqual(n.Spec.PodCIDRs, tc.wantCIDRs) {
				t.Errorf("got podCIDR=%q podCIDRs=%v, want %q %v", n.Spec.PodCIDR, n.Spec.PodCIDRs, tc.wantCIDR, tc.wantCIDRs)
			}
		})
	}
}

func TestSetDefaultsResources(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name            string
		capacity, alloc corev1.ResourceList
		wantCap, wantAl corev1.ResourceList
	}{
		{name: "nothing reported"},
		{
			name:     "allocatable copied from capacity",
			capacity: corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("8Gi")},
			wantCap:  corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("8Gi")},
			wantAl:   corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("8Gi")},
		},
		{
			name:     "allocatable kept",
			capacity: corev1.ResourceList{corev1.ResourceCPU: q("4")},
			alloc:    corev1.ResourceList{corev1.ResourceCPU: q("3500m")},
			wantCap:  corev1.ResourceList{corev1.ResourceCPU: q("4")},
			wantAl:   corev1.ResourceList{corev1.ResourceCPU: q("3500m")},
		},
		{
			name:     "empty allocatable is not replaced",
			capacity: corev1.ResourceList{corev1.ResourceCPU: q("4")},
			alloc:    corev1.ResourceList{},
			wantCap:  corev1.ResourceList{corev1.ResourceCPU: q("4")},
			wantAl:   corev1.ResourceList{},
		},
		{
			name:     "rounded up to milli",
			capacity: corev1.ResourceList{corev1.ResourceCPU: q("100.0001m")},
			alloc:    corev1.ResourceList{corev1.ResourceCPU: q("0.0000001")},
			wantCap:  corev1.ResourceList{corev1.ResourceCPU: q("101m")},
			wantAl:   corev1.ResourceList{corev1.ResourceCPU: q("1m")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Status: corev1.NodeStatus{Capacity: tc.capacity, Allocatable: tc.alloc}}
			SetDefaults(n)
			if !apiequality.Semantic.DeepEqual(n.Status.Capacity, tc.wantCap) || !apiequality.Semantic.DeepEqual(n.Status.Allocatable, tc.wantAl) {
				t.Errorf("got capacity=%v allocatable=%v, want %v %v", n.Status.Capacity, n.Status.Allocatable, tc.wantCap, tc.wantAl)
			}
		})
	}
}

func TestSetDefaultsAllocatableIsACopy(t *testing.T) {
	n := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}}}
	SetDefaults(n)
	n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("10")
	if got := n.Status.Capacity[corev1.ResourcePods]; got.Value() != 110 {
		t.Errorf("capacity changed with allocatable: %v", got.String())
	}
}

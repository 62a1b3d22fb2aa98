package endpoints

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func addr(ip string, uid ...string) corev1.EndpointAddress {
	a := corev1.EndpointAddress{IP: ip}
	if len(uid) > 0 {
		a.TargetRef = &corev1.ObjectReference{Kind: "Pod", UID: types.UID(uid[0])}
	}
	return a
}

func port(name string, n int32) corev1.EndpointPort {
	return corev1.EndpointPort{Name: name, Port: n, Protocol: corev1.ProtocolTCP}
}

func addrs(a ...corev1.EndpointAddress) []corev1.EndpointAddress { return a }
func ports(p ...corev1.EndpointPort) []corev1.EndpointPort       { return p }

func TestRepackSubsets(t *testing.T) {
	tests := []struct {
		name string
		in   []corev1.EndpointSubset
		want []corev1.EndpointSubset
	}{
		{name: "empty", in: nil, want: []corev1.EndpointSubset{}},
		{
			name: "one address per port is gathered",
			in: []corev1.EndpointSubset{
				{Addresses: addrs(addr("10.0.0.2")), Ports: ports(port("http", 80))},
				{Addresses: addrs(addr("10.0.0.1")), Ports: ports(port("http", 80))},
			},
			want: []corev1.EndpointSubset{{Addresses: addrs(addr("10.0.0.1"), addr("10.0.0.2")), Ports: ports(port("http", 80))}},
		},
		{
			name: "addresses with the same ports share a subset, ports sorted",
			in: []corev1.EndpointSubset{
				{Addresses: addrs(addr("10.0.0.1")), Ports: ports(port("https", 443), port("http", 80))},
				{Addresses: addrs(addr("10.0.0.2")), Ports: ports(port("http", 80))},
				{Addresses: addrs(addr("10.0.0.2")), Ports: ports(port("https", 443))},
			},
			want: []corev1.EndpointSubset{{Addresses: addrs(addr("10.0.0.1"), addr("10.0.0.2")), Ports: ports(port("http", 80), port("https", 443))}},
		},
		{
			name: "different ports make different subsets",
			in: []corev1.EndpointSubset{
				{Addresses: addrs(addr("10.0.0.1", "a")), Ports: ports(port("http", 8080))},
				{Addresses: addrs(addr("10.0.0.2", "b")), Ports: ports(port("http", 8081))},
			},
			want: []corev1.EndpointSubset{
				{Addresses: addrs(addr("10.0.0.1", "a")), Ports: ports(port("http", 8080))},
				{Addresses: addrs(addr("10.0.0.2", "b")), Ports: ports(port("http", 8081))},
			},
		},
		{
			name: "an address listed twice counts once; not ready wins",
			in: []corev1.EndpointSubset{
				{Addresses: addrs(addr("10.0.0.1", "a")), Ports: ports(port("http", 80))},
				{NotReadyAddresses: addrs(addr("10.0.0.1", "a")), Ports: ports(port("http", 80))},
				{Addresses: addrs(addr("10.0.0.2", "b"), addr("10.0.0.2", "b")), Ports: ports(port("http", 80))},
			},
			want: []corev1.EndpointSubset{{Addresses: addrs(addr("10.0.0.2", "b")), NotReadyAddresses: addrs(addr("10.0.0.1", "a")), Ports: ports(port("http", 80))}},
		},
		{
			name: "one IP, two pods: two addresses, the one without a target first",
			in: []corev1.EndpointSubset{
				{Addresses: addrs(addr("10.0.0.1", "b"), addr("10.0.0.1", "a"), addr("10.0.0.1")), Ports: ports(port("", 80))},
			},
			want: []corev1.EndpointSubset{{Addresses: addrs(addr("10.0.0.1"), addr("10.0.0.1", "a"), addr("10.0.0.1", "b")), Ports: ports(port("", 80))}},
		},
		{
			name: "addresses without ports are kept",
			in: []corev1.EndpointSubset{
				{Addresses: addrs(addr("10.0.0.2"))},
				{Addresses: addrs(addr("10.0.0.1"))},
			},
			want: []corev1.EndpointSubset{{Addresses: addrs(addr("10.0.0.1"), addr("10.0.0.2"))}},
		},
		{
			name: "subsets sorted by their addresses",
			in: []corev1.EndpointSubset{
				{Addresses: addrs(addr("10.0.0.9")), Ports: ports(port("a", 1))},
				{NotReadyAddresses: addrs(addr("10.0.0.5")), Ports: ports(port("b", 2))},
				{Addresses: addrs(addr("10.0.0.1")), Ports: ports(port("c", 3))},
			},
			want: []corev1.EndpointSubset{
				{NotReadyAddresses: addrs(addr("10.0.0.5")), Ports: ports(port("b", 2))},
				{Addresses: addrs(addr("10.0.0.1")), Ports: ports(port("c", 3))},
				{Addresses: addrs(addr("10.0.0.9")), Ports: ports(port("a", 1))},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := cloneSubsets(tt.in)
			got := RepackSubsets(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RepackSubsets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.in); diff != "" {
				t.Errorf("the input was modified:\n%s", diff)
			}
			if diff := cmp.Diff(got, RepackSubsets(got)); diff != "" {
				t.Errorf("repacking twice differs:\n%s", diff)
			}
		})
	}
}

func cloneSubsets(in []corev1.EndpointSubset) []corev1.EndpointSubset {
	if in == nil {
		return nil
	}
	out := make([]corev1.EndpointSubset, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func TestTruncate(t *testing.T) {
	many := func(prefix string, n int) []corev1.EndpointAddress {
		out := make([]corev1.EndpointAddress, n)
		for i := range out {
			out[i] = addr(prefix, string(rune(i)))
		}
		return out
	}
	tests := []struct {
		name           string
		in             []corev1.EndpointSubset
		wantTruncated  bool
		wantReady      []int // per subset kept
		wantNotReady   []int
		wantSubsetsLen int
	}{
		{name: "at capacity", in: []corev1.EndpointSubset{{Addresses: many("a", 600), NotReadyAddresses: many("b", 400)}},
			wantReady: []int{600}, wantNotReady: []int{400}, wantSubsetsLen: 1},
		{name: "not ready cut first, in proportion", wantTruncated: true,
			in: []corev1.EndpointSubset{
				{Addresses: many("a", 900), NotReadyAddresses: many("b", 150)},
				{NotReadyAddresses: many("c", 50)},
			},
			wantReady: []int{900, 0}, wantNotReady: []int{75, 25}, wantSubsetsLen: 2},
		{name: "too many ready: not ready all dropped, ready in proportion", wantTruncated: true,
			in: []corev1.EndpointSubset{
				{Addresses: many("a", 1500), NotReadyAddresses: many("b", 10)},
				{Addresses: many("c", 500)},
			},
			wantReady: []int{750, 250}, wantNotReady: []int{0, 0}, wantSubsetsLen: 2},
		{name: "a subset left empty is dropped", wantTruncated: true,
			in: []corev1.EndpointSubset{
				{Addresses: many("a", 1001)},
				{NotReadyAddresses: many("b", 5)},
			},
			wantReady: []int{1000}, wantNotReady: []int{0}, wantSubsetsLen: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			subsets := tt.in
			if got := truncate(&subsets); got != tt.wantTruncated {
				t.Errorf("truncate = %v, want %v", got, tt.wantTruncated)
			}
			if len(subsets) != tt.wantSubsetsLen {
				t.Fatalf("%d subsets, want %d", len(subsets), tt.wantSubsetsLen)
			}
			total := 0
			for i, ss := range subsets {
				if len(ss.Addresses) != tt.wantReady[i] || len(ss.NotReadyAddresses) != tt.wantNotReady[i] {
					t.Errorf("subset %d: %d ready, %d not ready; want %d, %d", i, len(ss.Addresses), len(ss.NotReadyAddresses), tt.wantReady[i], tt.wantNotReady[i])
				}
				total += len(ss.Addresses) + len(ss.NotReadyAddresses)
			}
			if total > MaxCapacity {
				t.Errorf("%d addresses kept", total)
			}
		})
	}
}

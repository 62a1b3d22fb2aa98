package service

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var tableNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestServiceTable(t *testing.T) {
	created := metav1.NewTime(tableNow.Add(-26 * time.Hour))
	svc := func(mutate func(*corev1.Service)) corev1.Service {
		s := corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", CreationTimestamp: created},
			Spec: corev1.ServiceSpec{
				Type:       corev1.ServiceTypeClusterIP,
				ClusterIP:  "10.96.0.10",
				ClusterIPs: []string{"10.96.0.10", "fd00::a"},
				Selector:   map[string]string{"tier": "front", "app": "web"},
				Ports:      []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 443, Protocol: corev1.ProtocolTCP}},
			},
		}
		mutate(&s)
		return s
	}
	nodePorts := func(s *corev1.Service) {
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP})
	}
	tests := []struct {
		name string
		svc  corev1.Service
		want []any
	}{
		{"ClusterIP", svc(func(*corev1.Service) {}),
			[]any{"web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP,443/TCP", "26h", "app=web,tier=front"}},
		{"ClusterIP with external IPs", svc(func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"203.0.113.7", "203.0.113.8"} }),
			[]any{"web", "ClusterIP", "10.96.0.10", "203.0.113.7,203.0.113.8", "80/TCP,443/TCP", "26h", "app=web,tier=front"}},
		{"headless without selector", svc(func(s *corev1.Service) {
			s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.Selector = "None", []string{"None"}, nil
		}), []any{"web", "ClusterIP", "None", "<none>", "80/TCP,443/TCP", "26h", "<none>"}},
		{"NodePort", svc(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			nodePorts(s)
		}), []any{"web", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,443/TCP,53:30053/UDP", "26h", "app=web,tier=front"}},
		{"LoadBalancer, pending", svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }),
			[]any{"web", "LoadBalancer", "10.96.0.10", "<pending>", "80/TCP,443/TCP", "26h", "app=web,tier=front"}},
		{"LoadBalancer with ingress, sorted, unique, not clipped", svc(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{
				{IP: "198.51.100.9"}, {Hostname: "lb-123.elb.example.com"}, {IP: "198.51.100.10", Hostname: "ignored.example.com"}, {IP: "198.51.100.9"}, {},
			}
		}), []any{"web", "LoadBalancer", "10.96.0.10", "198.51.100.10,198.51.100.9,lb-123.elb.example.com", "80/TCP,443/TCP", "26h", "app=web,tier=front"}},
		{"LoadBalancer, ingress then external IPs", svc(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ExternalIPs = []string{"203.0.113.7"}
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.9"}}
		}), []any{"web", "LoadBalancer", "10.96.0.10", "198.51.100.9,203.0.113.7", "80/TCP,443/TCP", "26h", "app=web,tier=front"}},
		{"LoadBalancer, only external IPs", svc(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.ExternalIPs = []string{"203.0.113.7"}
		}), []any{"web", "LoadBalancer", "10.96.0.10", "203.0.113.7", "80/TCP,443/TCP", "26h", "app=web,tier=front"}},
		{"ExternalName", svc(func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}
		}), []any{"web", "ExternalName", "<none>", "db.example.com", "<none>", "26h", "<none>"}},
		{"unknown type", svc(func(s *corev1.Service) { s.Spec.Type = "" }),
			[]any{"web", "", "10.96.0.10", "<unknown>", "80/TCP,443/TCP", "26h", "app=web,tier=front"}},
		{"no creation time", svc(func(s *corev1.Service) { s.CreationTimestamp = metav1.Time{} }),
			[]any{"web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP,443/TCP", "<unknown>", "app=web,tier=front"}},
	}
	list := &corev1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "12"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.svc)
	}
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	tbl, err := c.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	if len(tbl.Rows) != len(tests) || tbl.ResourceVersion != "12" {
		t.Fatalf("got %d rows at rv %q", len(tbl.Rows), tbl.ResourceVersion)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tbl.Rows[i].Cells; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells:\n got %q\nwant %q", got, tt.want)
			}
			if tbl.Rows[i].Object.Object != &list.Items[i] {
				t.Errorf("row.Object is not the service")
			}
		})
	}
}

func TestServiceTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}
	tbl, err := c.ConvertToTable(context.Background(), svc, nil)
	if err != nil {
		t.Fatal(err)
	}
	type col struct {
		name     string
		priority int32
	}
	var cols []col
	for _, d := range tbl.ColumnDefinitions {
		cols = append(cols, col{d.Name, d.Priority})
		if d.Description == "" {
			t.Errorf("column %s has no description", d.Name)
		}
	}
	want := []col{{"Name", 0}, {"Type", 0}, {"Cluster-IP", 0}, {"External-IP", 0}, {"Port(s)", 0}, {"Age", 0}, {"Selector", 1}}
	if !reflect.DeepEqual(cols, want) {
		t.Errorf("columns = %v, want %v", cols, want)
	}
	if len(tbl.Rows) != 1 || len(tbl.Rows[0].Cells) != len(want) {
		t.Errorf("single service: want one row of %d cells, got %v", len(want), tbl.Rows)
	}
}

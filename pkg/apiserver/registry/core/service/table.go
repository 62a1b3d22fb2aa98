package service

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get services`: NAME, TYPE,
// CLUSTER-IP, EXTERNAL-IP, PORT(S), AGE and, with -o wide, SELECTOR.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.Service] {
	spec := corev1.ServiceSpec{}.SwaggerDoc()
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Type", Type: "string", Description: spec["type"]},
		{Name: "Cluster-IP", Type: "string", Description: spec["clusterIP"]},
		{Name: "External-IP", Type: "string", Description: spec["externalIPs"]},
		{Name: "Port(s)", Type: "string", Description: spec["ports"]},
		table.AgeColumn(),
		{Name: "Selector", Type: "string", Priority: 1, Description: spec["selector"]},
	}, serviceRow)
}

func serviceRow(svc *corev1.Service, now time.Time) metav1.TableRow {
	clusterIP := "<none>"
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	return metav1.TableRow{Cells: []any{
		svc.Name,
		string(svc.Spec.Type),
		clusterIP,
		externalIPCell(svc),
		table.OrNone(portsCell(svc.Spec.Ports)),
		table.Age(svc, now),
		labels.FormatLabels(svc.Spec.Selector),
	}}
}

// externalIPCell is the EXTERNAL-IP cell: the external IPs, and for load
// balancers the ingress points first ("<pending>" until a controller reports
// one); the DNS name of an ExternalName service.
//
// kubectl's own printer clips the ingress list to 16 characters without
// -o wide; the server always prints the wide form, as upstream's does.
func externalIPCell(svc *corev1.Service) string {
	external := svc.Spec.ExternalIPs
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return table.OrNone(strings.Join(external, ","))
	case corev1.ServiceTypeLoadBalancer:
		addrs := append(ingressAddresses(svc.Status.LoadBalancer), external...)
		if len(addrs) == 0 {
			return "<pending>"
		}
		return strings.Join(addrs, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

// ingressAddresses lists each ingress point's IP, or its hostname when it has
// no IP, sorted and without repeats.
func ingressAddresses(status corev1.LoadBalancerStatus) []string {
	addrs := sets.New[string]()
	for _, ing := range status.Ingress {
		if ing.IP != "" {
			addrs.Insert(ing.IP)
		} else if ing.Hostname != "" {
			addrs.Insert(ing.Hostname)
		}
	}
	return sets.List(addrs)
}

// portsCell is the PORT(S) cell: "80/TCP", or "80:30080/TCP" with a node
// port, joined by commas.
func portsCell(ports []corev1.ServicePort) string {
	pieces := make([]string, len(ports))
	for i, p := range ports {
		if p.NodePort > 0 {
			pieces[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			pieces[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	return strings.Join(pieces, ",")
}

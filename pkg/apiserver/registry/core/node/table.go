package node

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// Labels that name a node's roles: "node-role.kubernetes.io/<role>" with any
// value, or the older "kubernetes.io/role=<role>".
const (
	roleLabelPrefix = "node-role.kubernetes.io/"
	legacyRoleLabel = "kubernetes.io/role"
)

// NewTableConvertor returns the columns of `kubectl get nodes`.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.Node] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Status", Type: "string", Description: "Ready condition of the node, and whether it takes new pods."},
		{Name: "Roles", Type: "string", Description: "Roles from the node's node-role.kubernetes.io labels."},
		table.AgeColumn(),
		{Name: "Version", Type: "string", Description: "Version of the node agent (kubelet)."},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: "First InternalIP address of the node."},
		{Name: "External-IP", Type: "string", Priority: 1, Description: "First ExternalIP address of the node."},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: "Operating system image reported by the node."},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: "Kernel version and architecture of the node."},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: "Container runtime name and version."},
	}, nodeRow)
}

func nodeRow(node *corev1.Node, now time.Time) metav1.TableRow {
	info := node.Status.NodeInfo
	kernel := table.OrUnknown(info.KernelVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	return metav1.TableRow{Cells: []any{
		node.Name,
		nodeStatus(node),
		nodeRoles(node),
		table.Age(node, now),
		info.KubeletVersion,
		nodeAddress(node, corev1.NodeInternalIP),
		nodeAddress(node, corev1.NodeExternalIP),
		table.OrUnknown(info.OSImage),
		kernel,
		table.OrUnknown(info.ContainerRuntimeVersion),
	}}
}

// nodeStatus is "Ready" or "NotReady" (False or Unknown) from the Ready
// condition, "Unknown" when there is none, plus ",SchedulingDisabled" for a
// cordoned node.
func nodeStatus(node *corev1.Node) string {
	status := "Unknown"
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		status = "NotReady"
		if c.Status == corev1.ConditionTrue {
			status = "Ready"
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles lists the node's roles, sorted and without duplicates.
func nodeRoles(node *corev1.Node) string {
	seen := map[string]bool{}
	for k, v := range node.Labels {
		role := ""
		switch {
		case strings.HasPrefix(k, roleLabelPrefix):
			role = strings.TrimPrefix(k, roleLabelPrefix)
		case k == legacyRoleLabel:
			role = v
		}
		if role != "" {
			seen[role] = true
		}
	}
	if len(seen) == 0 {
		return "<none>"
	}
	roles := make([]string, 0, len(seen))
	for r := range seen {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return strings.Join(roles, ",")
}

func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

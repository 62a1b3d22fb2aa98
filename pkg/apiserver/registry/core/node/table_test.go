package node

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

func makeTableNode(name string, ready corev1.ConditionStatus, labels map[string]string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(tableNow.Add(-49 * time.Hour))}}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: ready},
		}
	}
	return n
}

func TestNodeTable(t *testing.T) {
	cordoned := makeTableNode("cordoned", corev1.ConditionTrue, nil)
	cordoned.Spec.Unschedulable = true
	cordonedNotReady := makeTableNode("cordoned-notready", corev1.ConditionFalse, nil)
	cordonedNotReady.Spec.Unschedulable = true

	full := makeTableNode("full", corev1.ConditionTrue, map[string]string{"node-role.kubernetes.io/worker": ""})
	full.Status.NodeInfo = corev1.NodeSystemInfo{
		KubeletVersion: "v1.37.2", OSImage: "Debian GNU/Linux 13 (trixie)", KernelVersion: "6.12.0",
		Architecture: "amd64", ContainerRuntimeVersion: "containerd://2.1.0",
	}
	full.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "full"},
		{Type: corev1.NodeInternalIP, Address: "10.0.0.1"},
		{Type: corev1.NodeInternalIP, Address: "10.0.0.2"},
		{Type: corev1.NodeExternalIP, Address: "203.0.113.1"},
	}

	tests := []struct {
		name string
		node corev1.Node
		want []any
	}{
		{"ready, no roles", makeTableNode("a", corev1.ConditionTrue, nil),
			[]any{"a", "Ready", "<none>", "2d1h", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"not ready", makeTableNode("b", corev1.ConditionFalse, nil),
			[]any{"b", "NotReady", "<none>", "2d1h", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"ready unknown", makeTableNode("c", corev1.ConditionUnknown, nil),
			[]any{"c", "NotReady", "<none>", "2d1h", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"no ready condition", makeTableNode("d", "", nil),
			[]any{"d", "Unknown", "<none>", "2d1h", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"cordoned", cordoned,
			[]any{"cordoned", "Ready,SchedulingDisabled", "<none>", "2d1h", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"cordoned and not ready", cordonedNotReady,
			[]any{"cordoned-notready", "NotReady,SchedulingDisabled", "<none>", "2d1h", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"roles from both label styles, sorted, deduplicated",
			makeTableNode("roles", corev1.ConditionTrue, map[string]string{
				"node-role.kubernetes.io/worker":        "",
				"node-role.kubernetes.io/control-plane": "true",
				"node-role.kubernetes.io/":              "",
				"kubernetes.io/role":                    "worker",
				"kubernetes.io/hostname":                "roles",
			}),
			[]any{"roles", "Ready", "control-plane,worker", "2d1h", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"legacy role label", makeTableNode("legacy", corev1.ConditionTrue, map[string]string{"kubernetes.io/role": "master"}),
			[]any{"legacy", "Ready", "master", "2d1h", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"empty legacy role label", makeTableNode("empty", corev1.ConditionTrue, map[string]string{"kubernetes.io/role": ""}),
			[]any{"empty", "Ready", "<none>", "2d1h", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"node info and addresses", full,
			[]any{"full", "Ready", "worker", "2d1h", "v1.37.2", "10.0.0.1", "203.0.113.1", "Debian GNU/Linux 13 (trixie)", "6.12.0 (amd64)", "containerd://2.1.0"}},
	}

	list := &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.node)
	}
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	tbl, err := c.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	if len(tbl.Rows) != len(tests) || tbl.ResourceVersion != "5" {
		t.Fatalf("got %d rows at resourceVersion %q, want %d at 5", len(tbl.Rows), tbl.ResourceVersion, len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tbl.Rows[i].Cells; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells = %q\n          want %q", got, tt.want)
			}
			if tbl.Rows[i].Object.Object != &list.Items[i] {
				t.Errorf("row.Object is not the node")
			}
		})
	}
}

func TestNodeTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	node := makeTableNode("a", corev1.ConditionTrue, nil)
	tbl, err := c.ConvertToTable(context.Background(), &node, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names, wide []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
		if col.Priority == 1 {
			wide = append(wide, col.Name)
		}
	}
	if want := []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if want := []string{"Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"}; !reflect.DeepEqual(wide, want) {
		t.Errorf("wide columns = %v, want %v", wide, want)
	}
	if len(tbl.Rows) != 1 || len(tbl.Rows[0].Cells) != len(names) {
		t.Errorf("single node: %d rows, want 1 with %d cells", len(tbl.Rows), len(names))
	}

	tbl, err = c.ConvertToTable(context.Background(), &node, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ColumnDefinitions != nil || len(tbl.Rows) != 1 {
		t.Errorf("NoHeaders: columns = %v, rows = %d", tbl.ColumnDefinitions, len(tbl.Rows))
	}
}

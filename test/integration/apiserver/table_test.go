package apiserver

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTables: kubectl's table request gets Kubernetes' columns.
func TestTables(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, simplePod("tabled"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"/api/v1/namespaces/" + ns + "/pods": {"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"},
		"/api/v1/nodes":                      {"Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"},
		"/api/v1/namespaces":                 {"Name", "Status", "Age"},
	}
	for path, want := range cases {
		table := &metav1.Table{}
		err := c.Client.CoreV1().RESTClient().Get().AbsPath(path).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table)
		if err != nil {
			t.Errorf("%s as a table: %v", path, err)
			continue
		}
		var got []string
		for _, col := range table.ColumnDefinitions {
			got = append(got, col.Name)
		}
		if !equal(got, want) {
			t.Errorf("%s columns %v, want %v", path, got, want)
		}
	}
	table := &metav1.Table{}
	err := c.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/"+ns+"/pods/tabled").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Into(table)
	if err != nil || len(table.Rows) != 1 {
		t.Fatalf("pod as a table: %v", err)
	}
	cells := table.Rows[0].Cells
	if got := fmt.Sprintf("%v %v %v %v", cells[0], cells[1], cells[2], cells[3]); got != "tabled 0/1 Pending 0" {
		t.Errorf("pod row %v, want tabled 0/1 Pending 0", cells)
	}
}

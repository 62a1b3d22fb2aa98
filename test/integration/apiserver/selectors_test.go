package apiserver

import (
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFieldSelectors: the field selectors Kubernetes supports for pods, events and nodes.
func TestFieldSelectors(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	pods := c.Client.CoreV1().Pods(ns)
	for _, p := range []struct{ name, node, scheduler string }{
		{"a", "n1", "default-scheduler"}, {"b", "n2", "other"}, {"c", "", "default-scheduler"},
	} {
		pod := simplePod(p.name)
		pod.Spec.NodeName = p.node
		pod.Spec.SchedulerName = p.scheduler
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := pods.Get(ctx, "a", metav1.GetOptions{})
	a.Status.Phase = corev1.PodRunning
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	podCases := map[string][]string{
		"spec.nodeName=n1":                      {"a"},
		"spec.nodeName=":                        {"c"},
		"spec.schedulerName=other":              {"b"},
		"status.phase=Pending":                  {"b", "c"},
		"status.phase!=Pending":                 {"a"},
		"metadata.name=b":                       {"b"},
		"metadata.namespace=" + ns:              {"a", "b", "c"},
		"spec.nodeName!=,status.phase!=Running": {"b"},
	}
	for sel, want := range podCases {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Errorf("pods %s: %v", sel, err)
			continue
		}
		if got := podNames(list.Items); !equal(got, want) {
			t.Errorf("pods %s = %v, want %v", sel, got, want)
		}
	}
	if _, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.image=x"}); err == nil || !contains(err.Error(), "field label not supported: spec.image") {
		t.Errorf("unsupported pod field: %v", err)
	}

	events := c.Client.CoreV1().Events(ns)
	for i, e := range []struct{ kind, name, reason, typ string }{
		{"Pod", "a", "Started", "Normal"}, {"Pod", "b", "BackOff", "Warning"}, {"Node", "n1", "NodeReady", "Normal"},
	} {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "e" + string(rune('0'+i))},
			InvolvedObject: corev1.ObjectReference{Kind: e.kind, Name: e.name, Namespace: ns},
			Reason:         e.reason, Type: e.typ, Message: "m",
		}
		if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventCases := map[string][]string{
		"involvedObject.kind=Pod":                       {"e0", "e1"},
		"involvedObject.name=a,involvedObject.kind=Pod": {"e0"},
		"reason=NodeReady":                              {"e2"},
		"type=Warning":                                  {"e1"},
		"involvedObject.namespace=" + ns:                {"e0", "e1", "e2"},
	}
	for sel, want := range eventCases {
		list, err := events.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Errorf("events %s: %v", sel, err)
			continue
		}
		var got []string
		for _, e := range list.Items {
			got = append(got, e.Name)
		}
		sort.Strings(got)
		if !equal(got, want) {
			t.Errorf("events %s = %v, want %v", sel, got, want)
		}
	}
	// events.k8s.io names the same fields its own way.
	list, err := c.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=b"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "e1" {
		t.Errorf("events.k8s.io regarding.name=b: %v %v", list, err)
	}

	for _, n := range []struct {
		name  string
		unsch bool
	}{{"sel-n1", false}, {"sel-n2", true}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}, Spec: corev1.NodeSpec{Unschedulable: n.unsch}}
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer c.Client.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{})
	}
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{FieldSelector: "spec.unschedulable=true"})
	if err != nil || len(nodes.Items) != 1 || nodes.Items[0].Name != "sel-n2" {
		t.Errorf("nodes spec.unschedulable=true: %v %v", nodes, err)
	}
	nodes, err = c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=sel-n1"})
	if err != nil || len(nodes.Items) != 1 {
		t.Errorf("nodes metadata.name=sel-n1: %v %v", nodes, err)
	}
}

// TestEventSourceFieldSelector: the core/v1 "source" field selects an event by
// source.component, or by reportingController when the event has no source, as the
// conformance test "Events API should ensure that an event can be fetched, patched, deleted,
// and listed" lists an event it wrote through events.k8s.io/v1.
func TestEventSourceFieldSelector(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)

	_, err := c.Client.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "new"},
		Regarding:           corev1.ObjectReference{Namespace: ns},
		EventTime:           metav1.NowMicro(),
		Note:                "written through events.k8s.io",
		Action:              "Do",
		Reason:              "Test",
		Type:                corev1.EventTypeNormal,
		ReportingController: "test-controller",
		ReportingInstance:   "test-node",
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []*corev1.Event{{
		ObjectMeta:     metav1.ObjectMeta{Name: "old"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: ns},
		Source:         corev1.EventSource{Component: "kubelet", Host: "n1"},
		Reason:         "Started", Type: corev1.EventTypeNormal, Message: "m",
	}, {
		// source.component wins over reportingController.
		ObjectMeta:          metav1.ObjectMeta{Name: "both"},
		InvolvedObject:      corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: ns},
		Source:              corev1.EventSource{Component: "scheduler"},
		ReportingController: "test-controller",
		ReportingInstance:   "s1",
		Reason:              "Scheduled", Type: corev1.EventTypeNormal, Message: "m",
		EventTime: metav1.NowMicro(), Action: "Binding",
	}} {
		if _, err := c.Client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", ev.Name, err)
		}
	}

	coreCases := map[string][]string{
		"source=test-controller":             {"new"},
		"source=kubelet":                     {"old"},
		"source=scheduler":                   {"both"},
		"reportingComponent=test-controller": {"both", "new"},
		"source!=kubelet":                    {"both", "new"},
	}
	for sel, want := range coreCases {
		list, err := c.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Errorf("core/v1 events %s: %v", sel, err)
			continue
		}
		var got []string
		for _, e := range list.Items {
			got = append(got, e.Name)
		}
		sort.Strings(got)
		if !equal(got, want) {
			t.Errorf("core/v1 events %s = %v, want %v", sel, got, want)
		}
	}
	list, err := c.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reportingController=test-controller"})
	if err != nil {
		t.Fatalf("events.k8s.io reportingController=test-controller: %v", err)
	}
	var got []string
	for _, e := range list.Items {
		got = append(got, e.Name)
	}
	sort.Strings(got)
	if want := []string{"both", "new"}; !equal(got, want) {
		t.Errorf("events.k8s.io reportingController=test-controller = %v, want %v", got, want)
	}
}

func podNames(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

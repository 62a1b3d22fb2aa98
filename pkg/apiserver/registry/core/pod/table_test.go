package pod

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

func tableAgo(d time.Duration) metav1.Time { return metav1.NewTime(tableNow.Add(-d)) }

// Container states, as the node agent reports them.
func runningState() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: tableAgo(time.Hour)}}
}

func waitingState(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func terminatedState(reason string, exitCode, signal int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exitCode, Signal: signal}}
}

// tablePodBuilder makes test pods: makeTablePod("p").Phase(...).Container(...).
type tablePodBuilder struct{ pod corev1.Pod }

func makeTablePod(name string) *tablePodBuilder {
	return &tablePodBuilder{pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: tableAgo(10 * time.Minute)}}}
}

func (b *tablePodBuilder) Phase(p corev1.PodPhase) *tablePodBuilder { b.pod.Status.Phase = p; return b }
func (b *tablePodBuilder) Reason(r string) *tablePodBuilder         { b.pod.Status.Reason = r; return b }
func (b *tablePodBuilder) Deleted() *tablePodBuilder {
	t := tableAgo(time.Second)
	b.pod.DeletionTimestamp = &t
	return b
}

func (b *tablePodBuilder) Condition(t corev1.PodConditionType, s corev1.ConditionStatus, reason string) *tablePodBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason})
	return b
}

// Container adds an app container and its status.
func (b *tablePodBuilder) Container(name string, state corev1.ContainerState, ready bool, restarts int32) *tablePodBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: name})
	b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses,
		corev1.ContainerStatus{Name: name, State: state, Ready: ready, RestartCount: restarts})
	return b
}

// Init adds an init container and its status.
func (b *tablePodBuilder) Init(name string, state corev1.ContainerState, restarts int32) *tablePodBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: name})
	b.pod.Status.InitContainerStatuses = append(b.pod.Status.InitContainerStatuses,
		corev1.ContainerStatus{Name: name, State: state, RestartCount: restarts})
	return b
}

// Sidecar adds a restartable init container and its status.
func (b *tablePodBuilder) Sidecar(name string, state corev1.ContainerState, started, ready bool, restarts int32) *tablePodBuilder {
	always := corev1.ContainerRestartPolicyAlways
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: name, RestartPolicy: &always})
	b.pod.Status.InitContainerStatuses = append(b.pod.Status.InitContainerStatuses,
		corev1.ContainerStatus{Name: name, State: state, Started: &started, Ready: ready, RestartCount: restarts})
	return b
}

// InitSpecOnly adds an init container that has no status yet.
func (b *tablePodBuilder) InitSpecOnly(name string) *tablePodBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: name})
	return b
}

// LastTerminated sets when the named container's previous run ended.
func (b *tablePodBuilder) LastTerminated(name string, finishedAgo time.Duration) *tablePodBuilder {
	last := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: tableAgo(finishedAgo)}}
	for _, list := range [][]corev1.ContainerStatus{b.pod.Status.InitContainerStatuses, b.pod.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				list[i].LastTerminationState = last
			}
		}
	}
	return b
}

func (b *tablePodBuilder) Obj() corev1.Pod { return b.pod }

func TestPodTable(t *testing.T) {
	// Columns: NAME READY STATUS RESTARTS AGE; READY, STATUS and RESTARTS vary.
	tests := []struct {
		name     string
		pod      corev1.Pod
		ready    string
		status   string
		restarts string
		done     string // Reason of the RowCompleted condition, "" for none
	}{
		{"pending, no status yet", makeTablePod("p").Phase(corev1.PodPending).Obj(), "0/0", "Pending", "0", ""},
		{"running and ready",
			makeTablePod("p").Phase(corev1.PodRunning).Condition(corev1.PodReady, corev1.ConditionTrue, "").
				Container("a", runningState(), true, 0).Obj(), "1/1", "Running", "0", ""},
		{"running, container not ready",
			makeTablePod("p").Phase(corev1.PodRunning).Container("a", runningState(), false, 0).Obj(), "0/1", "Running", "0", ""},
		{"status reason wins over phase",
			makeTablePod("p").Phase(corev1.PodFailed).Reason("Evicted").Obj(), "0/0", "Evicted", "0", "Failed"},
		{"scheduling gated",
			makeTablePod("p").Phase(corev1.PodPending).Condition(corev1.PodScheduled, corev1.ConditionFalse, "SchedulingGated").
				Container("a", corev1.ContainerState{}, false, 0).Obj(), "0/1", "SchedulingGated", "0", ""},
		{"unschedulable stays pending",
			makeTablePod("p").Phase(corev1.PodPending).Condition(corev1.PodScheduled, corev1.ConditionFalse, "Unschedulable").
				Container("a", corev1.ContainerState{}, false, 0).Obj(), "0/1", "Pending", "0", ""},

		// Init containers.
		{"first init container running",
			makeTablePod("p").Phase(corev1.PodPending).Init("i1", runningState(), 0).Init("i2", waitingState("PodInitializing"), 0).
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/1", "Init:0/2", "0", ""},
		{"first init container waiting for PodInitializing counts as N/M",
			makeTablePod("p").Phase(corev1.PodPending).Init("i1", waitingState("PodInitializing"), 0).
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/1", "Init:0/1", "0", ""},
		{"second init container running",
			makeTablePod("p").Phase(corev1.PodPending).Init("i1", terminatedState("Completed", 0, 0), 0).Init("i2", runningState(), 0).
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/1", "Init:1/2", "0", ""},
		{"init container without status yet",
			makeTablePod("p").Phase(corev1.PodPending).Init("i1", terminatedState("Completed", 0, 0), 0).InitSpecOnly("i2").
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/1", "PodInitializing", "0", ""},
		{"init container failed",
			makeTablePod("p").Phase(corev1.PodPending).Init("i1", terminatedState("Error", 1, 0), 2).
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/1", "Init:Error", "2", ""},
		{"init container crash looping",
			makeTablePod("p").Phase(corev1.PodPending).Init("i1", waitingState("CrashLoopBackOff"), 4).LastTerminated("i1", 3*time.Minute).
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/1", "Init:CrashLoopBackOff", "4 (3m ago)", ""},
		{"init container image pull failing",
			makeTablePod("p").Phase(corev1.PodPending).Init("i1", waitingState("ImagePullBackOff"), 0).
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/1", "Init:ImagePullBackOff", "0", ""},
		{"init container killed by signal",
			makeTablePod("p").Phase(corev1.PodPending).Init("i1", terminatedState("", 137, 9), 0).Obj(), "0/0", "Init:Signal:9", "0", ""},
		{"init container exit code",
			makeTablePod("p").Phase(corev1.PodPending).Init("i1", terminatedState("", 2, 0), 0).Obj(), "0/0", "Init:ExitCode:2", "0", ""},
		{"init containers done, app container waiting on PodInitializing",
			makeTablePod("p").Phase(corev1.PodPending).Init("i1", terminatedState("Completed", 0, 0), 0).
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/1", "PodInitializing", "0", ""},
		{"initialized pod: app containers override a rerun init container",
			makeTablePod("p").Phase(corev1.PodRunning).Condition(corev1.PodInitialized, corev1.ConditionTrue, "").
				Init("i1", runningState(), 1).Container("a", waitingState("CrashLoopBackOff"), false, 2).Obj(), "0/1", "CrashLoopBackOff", "2", ""},
		{"initialized pod: a running app container keeps the init status, as upstream",
			makeTablePod("p").Phase(corev1.PodRunning).Condition(corev1.PodInitialized, corev1.ConditionTrue, "").
				Init("i1", runningState(), 1).Container("a", runningState(), true, 0).Obj(), "1/1", "Init:0/1", "0", ""},

		// App containers.
		{"container creating",
			makeTablePod("p").Phase(corev1.PodPending).Container("a", waitingState("ContainerCreating"), false, 0).Obj(), "0/1", "ContainerCreating", "0", ""},
		{"crash loop with last restart",
			makeTablePod("p").Phase(corev1.PodRunning).Container("a", waitingState("CrashLoopBackOff"), false, 5).LastTerminated("a", 2*time.Minute).Obj(),
			"0/1", "CrashLoopBackOff", "5 (2m ago)", ""},
		{"restarts without a finish time",
			makeTablePod("p").Phase(corev1.PodRunning).Container("a", runningState(), true, 3).Obj(), "1/1", "Running", "3", ""},
		{"latest restart across containers",
			makeTablePod("p").Phase(corev1.PodRunning).
				Container("a", runningState(), true, 1).LastTerminated("a", time.Hour).
				Container("b", runningState(), true, 2).LastTerminated("b", 5*time.Minute).Obj(), "2/2", "Running", "3 (5m ago)", ""},
		{"image pull error", makeTablePod("p").Phase(corev1.PodPending).Container("a", waitingState("ErrImagePull"), false, 0).Obj(), "0/1", "ErrImagePull", "0", ""},
		{"image pull back-off", makeTablePod("p").Phase(corev1.PodPending).Container("a", waitingState("ImagePullBackOff"), false, 0).Obj(), "0/1", "ImagePullBackOff", "0", ""},
		{"completed",
			makeTablePod("p").Phase(corev1.PodSucceeded).Container("a", terminatedState("Completed", 0, 0), false, 0).Obj(), "0/1", "Completed", "0", "Succeeded"},
		{"error",
			makeTablePod("p").Phase(corev1.PodFailed).Container("a", terminatedState("Error", 1, 0), false, 0).Obj(), "0/1", "Error", "0", "Failed"},
		{"oom killed",
			makeTablePod("p").Phase(corev1.PodRunning).Container("a", terminatedState("OOMKilled", 137, 0), false, 1).Obj(), "0/1", "OOMKilled", "1", ""},
		{"killed by signal",
			makeTablePod("p").Phase(corev1.PodFailed).Container("a", terminatedState("", 137, 9), false, 0).Obj(), "0/1", "Signal:9", "0", "Failed"},
		{"exit code",
			makeTablePod("p").Phase(corev1.PodFailed).Container("a", terminatedState("", 3, 0), false, 0).Obj(), "0/1", "ExitCode:3", "0", "Failed"},
		{"first container decides",
			makeTablePod("p").Phase(corev1.PodPending).Container("a", waitingState("ErrImagePull"), false, 0).
				Container("b", waitingState("ContainerCreating"), false, 0).Obj(), "0/2", "ErrImagePull", "0", ""},
		{"one completed, one running, pod ready",
			makeTablePod("p").Phase(corev1.PodRunning).Condition(corev1.PodReady, corev1.ConditionTrue, "").
				Container("a", terminatedState("Completed", 0, 0), false, 0).Container("b", runningState(), true, 0).Obj(), "1/2", "Running", "0", ""},
		{"one completed, one running, pod not ready",
			makeTablePod("p").Phase(corev1.PodRunning).Condition(corev1.PodReady, corev1.ConditionFalse, "").
				Container("a", terminatedState("Completed", 0, 0), false, 0).Container("b", runningState(), true, 0).Obj(), "1/2", "NotReady", "0", ""},
		{"one completed, one failed",
			makeTablePod("p").Phase(corev1.PodFailed).
				Container("a", terminatedState("Completed", 0, 0), false, 0).Container("b", terminatedState("Error", 2, 0), false, 0).Obj(), "0/2", "Error", "0", "Failed"},

		// Sidecars (restartable init containers).
		{"sidecar started and ready, app running",
			makeTablePod("p").Phase(corev1.PodRunning).Condition(corev1.PodInitialized, corev1.ConditionTrue, "").
				Condition(corev1.PodReady, corev1.ConditionTrue, "").
				Init("setup", terminatedState("Completed", 0, 0), 3).LastTerminated("setup", time.Minute).
				Sidecar("proxy", runningState(), true, true, 2).LastTerminated("proxy", 7*time.Minute).
				Container("a", runningState(), true, 0).Obj(), "2/2", "Running", "2 (7m ago)", ""},
		{"sidecar started but not ready lets the next init container run",
			makeTablePod("p").Phase(corev1.PodPending).Sidecar("proxy", runningState(), true, false, 0).Init("setup", runningState(), 0).
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/2", "Init:1/2", "0", ""},
		{"sidecar not started yet",
			makeTablePod("p").Phase(corev1.PodPending).Sidecar("proxy", runningState(), false, false, 0).
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/2", "Init:0/1", "0", ""},
		{"sidecar crash looping during init",
			makeTablePod("p").Phase(corev1.PodPending).Sidecar("proxy", waitingState("CrashLoopBackOff"), false, false, 3).
				Container("a", waitingState("PodInitializing"), false, 0).Obj(), "0/2", "Init:CrashLoopBackOff", "3", ""},
		{"sidecar running after app completed",
			makeTablePod("p").Phase(corev1.PodRunning).Condition(corev1.PodInitialized, corev1.ConditionTrue, "").
				Condition(corev1.PodReady, corev1.ConditionFalse, "").
				Sidecar("proxy", runningState(), true, true, 0).Container("a", terminatedState("Completed", 0, 0), false, 0).Obj(),
			"1/2", "Completed", "0", ""},

		// Deletion.
		{"terminating",
			makeTablePod("p").Phase(corev1.PodRunning).Deleted().Container("a", runningState(), true, 0).Obj(), "1/1", "Terminating", "0", ""},
		{"deleted after success stays completed",
			makeTablePod("p").Phase(corev1.PodSucceeded).Deleted().Container("a", terminatedState("Completed", 0, 0), false, 0).Obj(),
			"0/1", "Completed", "0", "Succeeded"},
		{"node lost",
			makeTablePod("p").Phase(corev1.PodRunning).Reason("NodeLost").Deleted().Container("a", runningState(), true, 0).Obj(), "1/1", "Unknown", "0", ""},
	}

	pods := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "11"}}
	for _, tt := range tests {
		pods.Items = append(pods.Items, tt.pod)
	}
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow)).ConvertToTable(context.Background(), pods, nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	if len(tbl.Rows) != len(tests) {
		t.Fatalf("got %d rows, want %d", len(tbl.Rows), len(tests))
	}
	if tbl.ResourceVersion != "11" {
		t.Errorf("table resourceVersion = %q, want 11", tbl.ResourceVersion)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := tbl.Rows[i]
			want := []any{"p", tt.ready, tt.status, tt.restarts, "10m", "<none>", "<none>", "<none>", "<none>"}
			if !reflect.DeepEqual(row.Cells, want) {
				t.Errorf("cells = %q\n          want %q", row.Cells, want)
			}
			done := ""
			for _, c := range row.Conditions {
				if c.Type == metav1.RowCompleted && c.Status == metav1.ConditionTrue {
					done = c.Reason
				}
			}
			if done != tt.done {
				t.Errorf("RowCompleted reason = %q, want %q", done, tt.done)
			}
			if row.Object.Object != &pods.Items[i] {
				t.Errorf("row.Object is not the pod")
			}
		})
	}
}

func TestPodTableWideColumns(t *testing.T) {
	withIPs := makeTablePod("p").Phase(corev1.PodRunning).Obj()
	withIPs.Spec.NodeName = "node-1"
	withIPs.Status.PodIP = "10.0.0.5"
	withIPs.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}
	withIPs.Status.NominatedNodeName = "node-2"

	onlyPodIP := makeTablePod("p").Obj()
	onlyPodIP.Status.PodIP = "10.0.0.6"

	gates := makeTablePod("p").Condition("example.com/a", corev1.ConditionTrue, "").Condition("example.com/b", corev1.ConditionFalse, "").Obj()
	gates.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/a"}, {ConditionType: "example.com/b"}, {ConditionType: "example.com/c"}}

	tests := []struct {
		name string
		pod  corev1.Pod
		want []any // IP, NODE, NOMINATED NODE, READINESS GATES
	}{
		{"none", makeTablePod("p").Obj(), []any{"<none>", "<none>", "<none>", "<none>"}},
		{"first of the pod IPs", withIPs, []any{"10.0.0.5", "node-1", "node-2", "<none>"}},
		{"singular pod IP", onlyPodIP, []any{"10.0.0.6", "<none>", "<none>", "<none>"}},
		{"readiness gates", gates, []any{"<none>", "<none>", "<none>", "1/3"}},
	}
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl, err := c.ConvertToTable(context.Background(), &tt.pod, &metav1.TableOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := tbl.Rows[0].Cells[5:]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("wide cells = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPodTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	pod := makeTablePod("p").Obj()

	tbl, err := c.ConvertToTable(context.Background(), &pod, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var wide []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
		if col.Priority == 1 {
			wide = append(wide, col.Name)
		}
		if col.Description == "" {
			t.Errorf("column %s has no description", col.Name)
		}
	}
	wantNames := []string{"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("columns = %v, want %v", names, wantNames)
	}
	if want := []string{"IP", "Node", "Nominated Node", "Readiness Gates"}; !reflect.DeepEqual(wide, want) {
		t.Errorf("wide columns = %v, want %v", wide, want)
	}
	if len(tbl.Rows[0].Cells) != len(tbl.ColumnDefinitions) {
		t.Errorf("%d cells for %d columns", len(tbl.Rows[0].Cells), len(tbl.ColumnDefinitions))
	}
	if tbl.ColumnDefinitions[0].Format != "name" {
		t.Errorf("Name column format = %q, want name", tbl.ColumnDefinitions[0].Format)
	}

	tbl, err = c.ConvertToTable(context.Background(), &pod, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ColumnDefinitions != nil || len(tbl.Rows) != 1 {
		t.Errorf("NoHeaders: columns = %v, rows = %d; want no columns, 1 row", tbl.ColumnDefinitions, len(tbl.Rows))
	}
}

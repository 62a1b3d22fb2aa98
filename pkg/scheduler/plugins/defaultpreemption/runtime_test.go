package defaultpreemption

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/cache"
	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	fwkruntime "github.com/berth-cluster/berth/pkg/scheduler/framework/runtime"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/defaultbinder"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/noderesources"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/prioritysort"
)

// TestWithRuntime preempts through the real runtime with NodeResourcesFit: PreFilter, Filter
// on every node, then PostFilter, as scheduleOne does.
func TestWithRuntime(t *testing.T) {
	getOffsetRand = func(int32) int32 { return 0 }
	nodes := []*v1.Node{node("n1", "4"), node("n2", "4")}
	pods := []*v1.Pod{
		pod("low", "n1", 1, "3").Obj(), pod("mid", "n1", 5, "1").Obj(),
		pod("mid2", "n2", 5, "4").Obj(),
	}
	tests := []struct {
		name        string
		preemptor   *v1.Pod
		wantNode    string
		wantCode    framework.Code
		wantMsg     string
		wantDeleted []string
	}{
		{
			// n1 needs only "low" (priority 1) gone, n2 "mid2" (priority 5).
			name:        "the node with the least important victims",
			preemptor:   pod("p", "", 10, "2").Obj(),
			wantNode:    "n1",
			wantCode:    framework.Success,
			wantMsg:     "preemption: found a potential placement for pod on node n1, preempting 1 victims",
			wantDeleted: []string{"low"},
		},
		{
			// Fit says UnschedulableAndUnresolvable when the request exceeds the node's
			// allocatable: no node is even tried.
			name:      "too big for any node",
			preemptor: pod("p", "", 10, "8").Obj(),
			wantCode:  framework.Unschedulable,
			wantMsg:   "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
		},
		{
			name:      "fits nowhere even without the lower-priority pods",
			preemptor: pod("p", "", 4, "4").Obj(),
			wantCode:  framework.Unschedulable,
			wantMsg:   "preemption: 0/2 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming pod.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cs := fake.NewClientset(pods[0], pods[1], pods[2], tt.preemptor)
			one := func(name string) configv1.PluginSet {
				return configv1.PluginSet{Enabled: []configv1.Plugin{{Name: name}}}
			}
			schedulerName := v1.DefaultSchedulerName
			profile := &configv1.KubeSchedulerProfile{SchedulerName: &schedulerName, Plugins: &configv1.Plugins{
				QueueSort:  one(prioritysort.Name),
				PreFilter:  one(noderesources.Name),
				Filter:     one(noderesources.Name),
				PostFilter: one(Name),
				Bind:       one(defaultbinder.Name),
			}}
			registry := framework.Registry{
				prioritysort.Name:  prioritysort.New,
				noderesources.Name: noderesources.New,
				Name:               New,
				defaultbinder.Name: defaultbinder.New,
			}
			f, err := fwkruntime.NewFramework(ctx, registry, profile, nil,
				fwkruntime.WithClientSet(cs),
				fwkruntime.WithEventRecorder(events.NewFakeRecorder(10)),
				fwkruntime.WithSnapshotSharedLister(cache.NewSnapshot(pods, nodes)),
				fwkruntime.WithPodNominator(&fakeNominator{}),
			)
			if err != nil {
				t.Fatal(err)
			}

			state := framework.NewCycleState()
			if _, s, _ := f.RunPreFilterPlugins(ctx, state, tt.preemptor); !s.IsSuccess() {
				t.Fatal(s)
			}
			filtered := map[string]*framework.Status{}
			infos, _ := f.SnapshotSharedLister().NodeInfos().List()
			for _, ni := range infos {
				s := f.RunFilterPluginsWithNominatedPods(ctx, state, tt.preemptor, ni)
				if s.IsSuccess() {
					t.Fatalf("%s fits already", ni.Node().Name)
				}
				filtered[ni.Node().Name] = s
			}
			m := fwkruntime.NewNodeToStatus(filtered, framework.NewStatus(framework.UnschedulableAndUnresolvable))

			result, status := f.RunPostFilterPlugins(ctx, state, tt.preemptor, m)
			if status.Code() != tt.wantCode || status.Message() != tt.wantMsg {
				t.Errorf("status %v\nwant      %v: %s", status, tt.wantCode, tt.wantMsg)
			}
			if result == nil || result.Mode() != framework.ModeOverride || result.NominatedNodeName != tt.wantNode {
				t.Errorf("result %+v, want nominating %q", result, tt.wantNode)
			}
			e := &env{cs: cs}
			if d := e.deleted(); !slices.Equal(d, tt.wantDeleted) {
				t.Errorf("deleted %v, want %v", d, tt.wantDeleted)
			}
		})
	}
}

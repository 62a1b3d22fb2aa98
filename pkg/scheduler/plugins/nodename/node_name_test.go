package nodename

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func nodeInfo(node *v1.Node) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return ni
}

func TestNodeName(t *testing.T) {
	tests := []struct {
		name      string
		pod       *v1.Pod
		node      *v1.Node
		wantCode  framework.Code
		wantNames sets.Set[string]
	}{
		{name: "no node name", pod: st.MakePod().Name("p").Obj(), node: st.MakeNode().Name("n1").Obj()},
		{
			name: "node name matches", pod: st.MakePod().Name("p").Node("n1").Obj(), node: st.MakeNode().Name("n1").Obj(),
			wantNames: sets.New("n1"),
		},
		{
			name: "node name does not match", pod: st.MakePod().Name("p").Node("n2").Obj(), node: st.MakeNode().Name("n1").Obj(),
			wantCode: framework.UnschedulableAndUnresolvable, wantNames: sets.New("n2"),
		},
	}
	p, _ := New(context.Background(), nil, nil)
	pl := p.(*NodeName)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := framework.NewCycleState()
			res, status := pl.PreFilter(context.Background(), state, tt.pod, nil)
			if !status.IsSuccess() {
				t.Fatalf("PreFilter: %v", status)
			}
			if tt.wantNames == nil {
				if !res.AllNodes() {
					t.Errorf("PreFilter narrowed to %v", res.NodeNames)
				}
			} else if res.AllNodes() || !res.NodeNames.Equal(tt.wantNames) {
				t.Errorf("PreFilter = %v, want %v", res, tt.wantNames)
			}
			got := pl.Filter(context.Background(), state, tt.pod, nodeInfo(tt.node))
			if got.Code() != tt.wantCode {
				t.Errorf("Filter = %v, want %v", got, tt.wantCode)
			}
			if tt.wantCode != framework.Success && got.Message() != ErrReason {
				t.Errorf("reason %q", got.Message())
			}
		})
	}
}

package interpodaffinity

import (
	"context"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func regionNode(name, region string) *v1.Node {
	return withoutHostname(st.MakeNode().Name(name).Label("region", region).Obj())
}

func azNode(name, az string) *v1.Node {
	return withoutHostname(st.MakeNode().Name(name).Label("az", az).Obj())
}

// withoutHostname drops the hostname label the builder sets, so the node has only the
// topology labels a case gives it.
func withoutHostname(n *v1.Node) *v1.Node {
	delete(n.Labels, v1.LabelHostname)
	return n
}

func securityPod(name, node, security string) *st.PodWrapper {
	w := st.MakePod().Name(name).Node(node)
	if security != "" {
		w.Label("security", security)
	}
	return w
}

func TestScore(t *testing.T) {
	s1InRegion := st.MakeAffinityTerm("region").In("security", "S1").Obj()
	s2InRegion := st.MakeAffinityTerm("region").In("security", "S2").Obj()
	s1InAz := st.MakeAffinityTerm("az").In("security", "S1").Obj()
	s2InAz := st.MakeAffinityTerm("az").In("security", "S2").Obj()
	// Only S2 matches: S2 and not S1.
	onlyS2InRegion := st.MakeAffinityTerm("region").In("security", "S2").Obj()
	onlyS2InRegion.LabelSelector.MatchExpressions = append(onlyS2InRegion.LabelSelector.MatchExpressions,
		metav1.LabelSelectorRequirement{Key: "security", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"S1"}})
	anySecurityInRegion := st.MakeAffinityTerm("region").Exists("security").Obj()

	tests := []struct {
		name       string
		args       *configv1.InterPodAffinityArgs
		pod        *v1.Pod
		pods       []*v1.Pod
		nodes      []*v1.Node
		namespaces map[string]map[string]string
		want       []int64
		wantSkip   bool
	}{
		{
			name:     "no affinity anywhere: Skip",
			pod:      securityPod("p", "", "S1").Obj(),
			pods:     []*v1.Pod{securityPod("e1", "node1", "S1").Obj()},
			nodes:    []*v1.Node{regionNode("node1", "China"), regionNode("node2", "India")},
			wantSkip: true,
		},
		{
			name: "preferred affinity: the region with a matching pod wins",
			pod:  securityPod("p", "", "S1").PreferredPodAffinityTerm(5, s1InRegion).Obj(),
			pods: []*v1.Pod{securityPod("e1", "node1", "S1").Obj()},
			nodes: []*v1.Node{
				regionNode("node1", "China"), regionNode("node2", "India"), azNode("node3", "az1"),
			},
			want: []int64{100, 0, 0},
		},
		{
			name: "more matching pods, higher score, every node of the region alike",
			pod:  securityPod("p", "", "S1").PreferredPodAffinityTerm(6, s2InRegion).Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "S2").Obj(), securityPod("e2", "node1", "S2").Obj(),
				securityPod("e3", "node2", "S2").Obj(), securityPod("e4", "node3", "S2").Obj(),
				securityPod("e5", "node4", "S2").Obj(), securityPod("e6", "node5", "S2").Obj(),
			},
			nodes: []*v1.Node{
				regionNode("node1", "China"), regionNode("node2", "India"), regionNode("node3", "China"),
				regionNode("node4", "China"), regionNode("node5", "India"),
			},
			want: []int64{100, 0, 100, 100, 0},
		},
		{
			name: "weights add up per region and scale between min and max",
			pod:  securityPod("p", "", "S1").PreferredPodAffinityTerm(8, onlyS2InRegion).PreferredPodAffinityTerm(2, anySecurityInRegion).Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "S1").Obj(), securityPod("e2", "node2", "S2").Obj(), securityPod("e3", "node3", "S1").Obj(),
			},
			nodes: []*v1.Node{regionNode("node1", "China"), regionNode("node2", "India"), azNode("node3", "az1")},
			// China 2, India 8+2=10, node3 has no region: 0. (s-0)/10*100.
			want: []int64{20, 100, 0},
		},
		{
			name: "symmetry: existing pods' preferred affinity the pod matches",
			pod:  securityPod("p", "", "S2").Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "S1").PreferredPodAffinityTerm(5, s1InRegion).Obj(),
				securityPod("e2", "node2", "S2").PreferredPodAffinityTerm(6, s2InRegion).Obj(),
			},
			nodes: []*v1.Node{regionNode("node1", "China"), regionNode("node2", "India"), azNode("node3", "az1")},
			want:  []int64{0, 100, 0},
		},
		{
			name: "symmetry: existing pods' required affinity at hardPodAffinityWeight",
			pod:  securityPod("p", "", "S1").Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "S1").RequiredPodAffinityTerm(s1InRegion).Obj(),
				securityPod("e2", "node2", "S2").RequiredPodAffinityTerm(s1InRegion).RequiredPodAffinityTerm(anySecurityInRegion).Obj(),
			},
			nodes: []*v1.Node{regionNode("node1", "China"), regionNode("node2", "India"), azNode("node3", "az1")},
			// China 1, India 2 (each matching required term counts once).
			want: []int64{50, 100, 0},
		},
		{
			name: "hardPodAffinityWeight 0 ignores existing pods' required affinity",
			args: &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ptr.To[int32](0)},
			pod:  securityPod("p", "", "S1").Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "S1").RequiredPodAffinityTerm(s1InRegion).Obj(),
			},
			nodes:    []*v1.Node{regionNode("node1", "China"), regionNode("node2", "India")},
			wantSkip: true,
		},
		{
			name: "preferred anti-affinity: the node without matching pods wins",
			pod:  securityPod("p", "", "S1").PreferredPodAntiAffinityTerm(5, s1InAz).Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "S1").Obj(), securityPod("e2", "node1", "S1").Obj(), securityPod("e3", "node2", "S1").Obj(),
			},
			nodes: []*v1.Node{azNode("node1", "az1"), azNode("node2", "az2"), azNode("node3", "az3")},
			// az1 -10, az2 -5, az3 0.
			want: []int64{0, 50, 100},
		},
		{
			name: "affinity, anti-affinity and symmetry together",
			pod:  securityPod("p", "", "S1").PreferredPodAffinityTerm(8, s1InRegion).PreferredPodAntiAffinityTerm(5, s2InAz).Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "S1").Obj(),
				securityPod("e2", "node2", "S2").Obj(),
				securityPod("e3", "node3", "").PreferredPodAffinityTerm(8, s1InRegion).PreferredPodAntiAffinityTerm(5, s2InAz).Obj(),
				securityPod("e4", "node4", "").PreferredPodAntiAffinityTerm(5, s1InAz).Obj(),
			},
			nodes: []*v1.Node{regionNode("node1", "China"), azNode("node2", "az1"), regionNode("node3", "India"), azNode("node4", "az2")},
			// 8, -5, 8, -5.
			want: []int64{100, 0, 100, 0},
		},
		{
			name: "preferred affinity with a namespace selector",
			pod: securityPod("p", "", "S1").Namespace("default").
				PreferredPodAffinityTerm(5, st.MakeAffinityTerm("region").In("security", "S1").NamespaceSelector(map[string]string{"team": "db"}).Obj()).Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "S1").Namespace("other").Obj(),
				securityPod("e2", "node2", "S1").Namespace("third").Obj(),
			},
			nodes:      []*v1.Node{regionNode("node1", "China"), regionNode("node2", "India")},
			namespaces: teamNamespace,
			want:       []int64{100, 0},
		},
		{
			name: "existing pod's preferred anti-affinity by namespace selector of the incoming pod's namespace",
			pod:  securityPod("p", "", "S1").Namespace("other").Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "").Namespace("third").
					PreferredPodAntiAffinityTerm(5, st.MakeAffinityTerm("region").In("security", "S1").NamespaceSelector(map[string]string{"team": "db"}).Obj()).Obj(),
				securityPod("e2", "node2", "").Namespace("third").
					PreferredPodAntiAffinityTerm(5, st.MakeAffinityTerm("region").In("security", "S1").NamespaceSelector(map[string]string{"team": "web"}).Obj()).Obj(),
			},
			nodes:      []*v1.Node{regionNode("node1", "China"), regionNode("node2", "India")},
			namespaces: teamNamespace,
			want:       []int64{0, 100},
		},
		{
			name: "ignorePreferredTermsOfExistingPods: Skip for a pod without preferred terms",
			args: &configv1.InterPodAffinityArgs{IgnorePreferredTermsOfExistingPods: true},
			pod:  securityPod("p", "", "S1").Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "").PreferredPodAffinityTerm(5, s1InRegion).Obj(),
			},
			nodes:    []*v1.Node{regionNode("node1", "China"), regionNode("node2", "India")},
			wantSkip: true,
		},
		{
			name: "a region whose other node has the pod with affinity",
			pod:  securityPod("p", "", "S1").Obj(),
			pods: []*v1.Pod{
				securityPod("e1", "node1", "S1").Obj(),
				securityPod("e2", "node2", "").PreferredPodAffinityTerm(8, s1InRegion).PreferredPodAntiAffinityTerm(5, s2InAz).Obj(),
			},
			nodes: []*v1.Node{regionNode("node1", "China"), regionNode("node2", "China")},
			want:  []int64{0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			pl, snap := newPlugin(t, tt.args, tt.pods, tt.nodes, tt.namespaces)
			state := framework.NewCycleState()
			s := pl.PreScore(ctx, state, tt.pod, snap.infos)
			if tt.wantSkip {
				if !s.IsSkip() {
					t.Fatalf("PreScore: %v, want Skip", s)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			var list framework.NodeScoreList
			for _, ni := range snap.infos {
				score, s := pl.Score(ctx, state, tt.pod, ni)
				if !s.IsSuccess() {
					t.Fatalf("Score: %v", s)
				}
				list = append(list, framework.NodeScore{Name: ni.Node().Name, Score: score})
			}
			if s := pl.NormalizeScore(ctx, state, tt.pod, list); !s.IsSuccess() {
				t.Fatalf("NormalizeScore: %v", s)
			}
			got := make([]int64, len(list))
			for i := range list {
				got[i] = list[i].Score
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("scores %v, want %v", got, tt.want)
			}
		})
	}
}

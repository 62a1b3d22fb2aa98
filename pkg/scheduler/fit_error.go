package scheduler

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// ErrNoNodesAvailable is the failure of a cycle in a cluster without nodes.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// NodeToStatus is what the scheduling cycle learnt of every node; the framework runtime's
// NodeToStatus implements it.
type NodeToStatus interface {
	framework.NodeToStatusReader
	Len() int
	ForEachExplicitNode(fn func(nodeName string, status *framework.Status))
	AbsentNodesStatus() *framework.Status
}

// Diagnosis is why a pod fits nowhere: per node, and which plugins said so.
type Diagnosis struct {
	NodeToStatus         NodeToStatus
	UnschedulablePlugins sets.Set[string]
	PendingPlugins       sets.Set[string]
	// PreFilterMsg is set when a PreFilter plugin rejected the pod for every node.
	PreFilterMsg string
	// PostFilterMsg is preemption's account of what it tried.
	PostFilterMsg string
}

// FitError says that a pod fits no node, in the words users know from kube-scheduler:
// "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {k: v}."
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

func (f *FitError) Error() string {
	msg := fmt.Sprintf("0/%v nodes are available:", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		// PreFilter rejected the pod for all nodes alike: their statuses would only repeat it.
		msg += " " + f.Diagnosis.PreFilterMsg + "."
	} else if reasons := f.histogram(); len(reasons) > 0 {
		msg += " " + strings.Join(reasons, ", ") + "."
	}
	if f.Diagnosis.PostFilterMsg != "" {
		msg += " " + f.Diagnosis.PostFilterMsg
	}
	return msg
}

// histogram counts the reasons over all nodes: "2 Insufficient cpu", sorted.
func (f *FitError) histogram() []string {
	counts := map[string]int{}
	nts := f.Diagnosis.NodeToStatus
	if nts == nil {
		return nil
	}
	nts.ForEachExplicitNode(func(_ string, s *framework.Status) {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	})
	if absent := f.NumAllNodes - nts.Len(); absent > 0 {
		for _, r := range nts.AbsentNodesStatus().Reasons() {
			counts[r] += absent
		}
	}
	out := make([]string, 0, len(counts))
	for r, n := range counts {
		out = append(out, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(out)
	return out
}

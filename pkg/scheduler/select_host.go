package scheduler

import (
	"errors"
	"math/rand/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

const (
	// minFeasibleNodesToFind: below this many nodes, every node is filtered.
	minFeasibleNodesToFind = 100
	// minFeasibleNodesPercentageToFind is the floor of the adaptive percentage.
	minFeasibleNodesPercentageToFind = 5
)

// numFeasibleNodesToFind is how many feasible nodes findNodesThatFitPod looks for before it
// stops, as kube-scheduler computes it: all of a small cluster; in a big one a percentage,
// given or adaptive (50% minus 1% per 125 nodes, at least 5%), and never fewer than 100.
func numFeasibleNodesToFind(percentage int32, numAllNodes int32) int32 {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	if percentage == 0 {
		percentage = 50 - numAllNodes/125
		if percentage < minFeasibleNodesPercentageToFind {
			percentage = minFeasibleNodesPercentageToFind
		}
	}
	n := numAllNodes * percentage / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

var errEmptyPriorityList = errors.New("empty priorityList")

// selectHost picks the node with the highest total score; among equals, each has the same
// chance (reservoir sampling, so one pass and no allocation).
func selectHost(scores []framework.NodePluginScores) (string, error) {
	if len(scores) == 0 {
		return "", errEmptyPriorityList
	}
	best := scores[0]
	ties := 1
	for _, s := range scores[1:] {
		switch {
		case s.TotalScore > best.TotalScore:
			best, ties = s, 1
		case s.TotalScore == best.TotalScore:
			ties++
			if rand.IntN(ties) == 0 {
				best = s
			}
		}
	}
	return best.Name, nil
}

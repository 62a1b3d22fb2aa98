// Package plugins is the registry of the scheduler's in-tree plugins: the name a profile uses
// for each, and the factory that builds it. Each plugin lives in its own folder below.
package plugins

import (
	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/defaultbinder"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/defaultpreemption"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/imagelocality"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/interpodaffinity"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/nodeaffinity"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/nodename"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/nodeports"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/noderesources"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/nodeunschedulable"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/podtopologyspread"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/prioritysort"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/schedulinggates"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins/tainttoleration"
)

// NewInTreeRegistry returns the factories of every plugin berth ships.
func NewInTreeRegistry() framework.Registry {
	return framework.Registry{
		prioritysort.Name:                    prioritysort.New,
		schedulinggates.Name:                 schedulinggates.New,
		nodeunschedulable.Name:               nodeunschedulable.New,
		nodename.Name:                        nodename.New,
		tainttoleration.Name:                 tainttoleration.New,
		nodeaffinity.Name:                    nodeaffinity.New,
		nodeports.Name:                       nodeports.New,
		noderesources.Name:                   noderesources.New,
		noderesources.BalancedAllocationName: noderesources.NewBalancedAllocation,
		imagelocality.Name:                   imagelocality.New,
		podtopologyspread.Name:               podtopologyspread.New,
		interpodaffinity.Name:                interpodaffinity.New,
		defaultpreemption.Name:               defaultpreemption.New,
		defaultbinder.Name:                   defaultbinder.New,
	}
}

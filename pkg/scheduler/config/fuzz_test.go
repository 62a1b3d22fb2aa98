package config_test

import (
	"context"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/cache"
	"github.com/berth-cluster/berth/pkg/scheduler/config"
	frameworkruntime "github.com/berth-cluster/berth/pkg/scheduler/framework/runtime"
	"github.com/berth-cluster/berth/pkg/scheduler/plugins"
)

// fuzzSeedConfigs are KubeSchedulerConfiguration files as users write them.
var fuzzSeedConfigs = []string{
	``,
	`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 8
percentageOfNodesToScore: 50
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
leaderElection: {leaderElect: false, leaseDuration: 30s}
clientConnection: {qps: 100, burst: 200, contentType: application/json}
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled: [{name: ImageLocality}]
      enabled: [{name: NodeResourcesFit, weight: 5}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
        requestedToCapacityRatio: {shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]}
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]
  - name: InterPodAffinity
    args: {hardPodAffinityWeight: 1}
  - name: DefaultPreemption
    args: {minCandidateNodesPercentage: 10, minCandidateNodesAbsolute: 100}
- schedulerName: batch
  percentageOfNodesToScore: 10
  plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: PrioritySort}, {name: NodeResourcesFit}, {name: DefaultBinder}]
`,
	`{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"KubeSchedulerConfiguration",
"profiles":[{"schedulerName":"a","pluginConfig":[{"name":"NodeResourcesBalancedAllocation","args":{"resources":[{"name":"cpu","weight":1}]}},
{"name":"NodeAffinity","args":{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"x","operator":"Exists"}]}]}}}},
{"name":"Custom","args":{"anything":[1,2,3]}}]}],
"extenders":[{"urlPrefix":"http://127.0.0.1:1/","filterVerb":"filter","prioritizeVerb":"prioritize","weight":0,"enableHTTPS":false}]}`,
	`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: -1
profiles: [{schedulerName: x}, {schedulerName: x}]
pluginConfig: oops
`,
}

// FuzzLoadSchedulerConfig decodes a KubeSchedulerConfiguration, completes it (defaults,
// plugin arguments, validation) and builds every profile's framework from it, as `berth
// scheduler --config` does. Nothing may panic: a bad file is an error.
func FuzzLoadSchedulerConfig(f *testing.F) {
	for _, s := range fuzzSeedConfigs {
		f.Add([]byte(s))
	}
	// A clientset to nowhere: plugins keep it, and nothing is started.
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1"})
	registry := plugins.NewInTreeRegistry()
	f.Fuzz(func(t *testing.T, data []byte) {
		var kc configv1.KubeSchedulerConfiguration
		if err := config.Decode(data, &kc); err != nil {
			return
		}
		cfg, err := config.Complete(&kc)
		if err != nil {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		factory := informers.NewSharedInformerFactory(client, 0)
		for i := range cfg.Profiles {
			p := &cfg.Profiles[i]
			_, _ = frameworkruntime.NewFramework(ctx, registry, p, cfg.PluginArgs[*p.SchedulerName],
				frameworkruntime.WithClientSet(client),
				frameworkruntime.WithInformerFactory(factory),
				frameworkruntime.WithSnapshotSharedLister(cache.NewEmptySnapshot()))
		}
	})
}

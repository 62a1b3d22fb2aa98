package config

import (
	"strings"
	"testing"

	configv1 "k8s.io/kube-scheduler/config/v1"
)

func TestDefaults(t *testing.T) {
	c, err := Complete(&configv1.KubeSchedulerConfiguration{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Profiles) != 1 || *c.Profiles[0].SchedulerName != "default-scheduler" {
		t.Fatalf("profiles %v, want one default-scheduler", c.Profiles)
	}
	if *c.Parallelism != 16 || *c.PodInitialBackoffSeconds != 1 || *c.PodMaxBackoffSeconds != 10 {
		t.Errorf("parallelism %d backoff %d..%d", *c.Parallelism, *c.PodInitialBackoffSeconds, *c.PodMaxBackoffSeconds)
	}
	if !*c.LeaderElection.LeaderElect || c.LeaderElection.ResourceName != "kube-scheduler" || c.LeaderElection.ResourceNamespace != "kube-system" {
		t.Errorf("leader election %+v", c.LeaderElection)
	}
	mp := c.Profiles[0].Plugins.MultiPoint.Enabled
	if len(mp) != 14 || mp[0].Name != "SchedulingGates" || mp[len(mp)-1].Name != "DefaultBinder" {
		t.Errorf("default multiPoint %v", mp)
	}
}

const twoProfiles = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 50
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  plugins:
    multiPoint:
      enabled:
      - name: NodeResourcesFit
        weight: 5
      disabled:
      - name: ImageLocality
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - name: cpu
          weight: 1
`

func TestTwoProfiles(t *testing.T) {
	var kc configv1.KubeSchedulerConfiguration
	if err := Decode([]byte(twoProfiles), &kc); err != nil {
		t.Fatal(err)
	}
	c, err := Complete(&kc)
	if err != nil {
		t.Fatal(err)
	}
	if *c.PercentageOfNodesToScore != 50 || len(c.Profiles) != 2 {
		t.Fatalf("percentage %v profiles %d", c.PercentageOfNodesToScore, len(c.Profiles))
	}
	packer := c.Profiles[1]
	var fitWeight int32
	for _, p := range packer.Plugins.MultiPoint.Enabled {
		if p.Name == "ImageLocality" {
			t.Error("ImageLocality was disabled but is still enabled")
		}
		if p.Name == "NodeResourcesFit" {
			fitWeight = *p.Weight
		}
	}
	if fitWeight != 5 {
		t.Errorf("NodeResourcesFit weight %d, want 5 (the custom one, in the default's place)", fitWeight)
	}
	if len(packer.Plugins.Score.Disabled) != 1 || packer.Plugins.Score.Disabled[0].Name != "NodeResourcesBalancedAllocation" {
		t.Errorf("score disabled %v", packer.Plugins.Score.Disabled)
	}
	args, ok := c.PluginArgs["packer"]["NodeResourcesFit"].(*configv1.NodeResourcesFitArgs)
	if !ok || args.ScoringStrategy == nil || args.ScoringStrategy.Type != configv1.MostAllocated {
		t.Errorf("NodeResourcesFit args %#v", c.PluginArgs["packer"]["NodeResourcesFit"])
	}
	if len(c.PluginArgs["default-scheduler"]) != 0 {
		t.Errorf("default profile args %v, want none given", c.PluginArgs["default-scheduler"])
	}
}

func TestInvalid(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"unknown field", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nbogus: 1\n", "unknown field"},
		{"duplicate profile", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n- schedulerName: a\n", "Duplicate value"},
		{"percentage", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 101\n", "not in valid range"},
		{"two binders", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n- urlPrefix: http://a\n  bindVerb: bind\n- urlPrefix: http://b\n  bindVerb: bind\n", "implementing bind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kc configv1.KubeSchedulerConfiguration
			err := Decode([]byte(tt.doc), &kc)
			if err == nil {
				_, err = Complete(&kc)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// Package config reads and defaults the scheduler's configuration: a KubeSchedulerConfiguration
// (kubescheduler.config.k8s.io/v1) file, the format kube-scheduler users already have. It is
// the first step of the scheduler's Run: which profiles exist, which plugins each runs at
// which extension point, with which arguments.
package config

import (
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
)

// Config is a defaulted, validated configuration with every plugin's arguments decoded.
type Config struct {
	configv1.KubeSchedulerConfiguration
	// PluginArgs holds, per profile (scheduler name) and plugin, the typed arguments
	// (*configv1.NodeResourcesFitArgs, ...).
	PluginArgs map[string]map[string]runtime.Object
}

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
)

func init() {
	utilruntime.Must(configv1.AddToScheme(scheme))
}

// Load reads the configuration from path; an empty path gives the defaults.
func Load(path string) (*Config, error) {
	var kc configv1.KubeSchedulerConfiguration
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the scheduler configuration: %w", err)
		}
		if err := Decode(data, &kc); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return Complete(&kc)
}

// Decode parses a KubeSchedulerConfiguration document (YAML or JSON), strictly: unknown
// fields are errors, as kube-scheduler reports them.
func Decode(data []byte, into *configv1.KubeSchedulerConfiguration) error {
	obj, gvk, err := codecs.UniversalDecoder(configv1.SchemeGroupVersion).Decode(data, nil, into)
	if err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	if _, ok := obj.(*configv1.KubeSchedulerConfiguration); !ok {
		return fmt.Errorf("expected a KubeSchedulerConfiguration, got %v", gvk)
	}
	return nil
}

// Complete defaults kc, decodes the plugin arguments and validates the result.
func Complete(kc *configv1.KubeSchedulerConfiguration) (*Config, error) {
	SetDefaults(kc)
	c := &Config{KubeSchedulerConfiguration: *kc, PluginArgs: map[string]map[string]runtime.Object{}}
	for _, p := range kc.Profiles {
		args := map[string]runtime.Object{}
		for _, pc := range p.PluginConfig {
			if _, dup := args[pc.Name]; dup {
				return nil, fmt.Errorf("profiles[%s].pluginConfig: repeated config for plugin %s", *p.SchedulerName, pc.Name)
			}
			obj, err := decodeArgs(pc)
			if err != nil {
				return nil, fmt.Errorf("profiles[%s].pluginConfig[%s]: %w", *p.SchedulerName, pc.Name, err)
			}
			args[pc.Name] = obj
		}
		c.PluginArgs[*p.SchedulerName] = args
	}
	if err := Validate(c); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeArgs turns a plugin's raw args into its typed args; args of a plugin berth does not
// know a type for stay raw (an out-of-tree plugin decodes its own).
func decodeArgs(pc configv1.PluginConfig) (runtime.Object, error) {
	if pc.Args.Object != nil {
		return pc.Args.Object, nil
	}
	if len(pc.Args.Raw) == 0 {
		return nil, nil
	}
	kind := pc.Name + "Args"
	gvk := configv1.SchemeGroupVersion.WithKind(kind)
	if !scheme.Recognizes(gvk) {
		return &runtime.Unknown{Raw: pc.Args.Raw, ContentType: runtime.ContentTypeJSON}, nil
	}
	obj, _, err := codecs.UniversalDecoder(configv1.SchemeGroupVersion).Decode(pc.Args.Raw, &gvk, nil)
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// SetDefaults fills in what kube-scheduler's v1 defaults fill in.
func SetDefaults(kc *configv1.KubeSchedulerConfiguration) {
	if kc.Parallelism == nil {
		kc.Parallelism = ptr.To[int32](16)
	}
	if kc.PodInitialBackoffSeconds == nil {
		kc.PodInitialBackoffSeconds = ptr.To[int64](1)
	}
	if kc.PodMaxBackoffSeconds == nil {
		kc.PodMaxBackoffSeconds = ptr.To[int64](10)
	}
	le := &kc.LeaderElection
	if le.LeaderElect == nil {
		le.LeaderElect = ptr.To(true)
	}
	if le.LeaseDuration.Duration == 0 {
		le.LeaseDuration = metav1.Duration{Duration: 15 * time.Second}
	}
	if le.RenewDeadline.Duration == 0 {
		le.RenewDeadline = metav1.Duration{Duration: 10 * time.Second}
	}
	if le.RetryPeriod.Duration == 0 {
		le.RetryPeriod = metav1.Duration{Duration: 2 * time.Second}
	}
	if le.ResourceLock == "" {
		le.ResourceLock = "leases"
	}
	if le.ResourceNamespace == "" {
		le.ResourceNamespace = configv1.SchedulerDefaultLockObjectNamespace
	}
	if le.ResourceName == "" {
		le.ResourceName = configv1.SchedulerDefaultLockObjectName
	}
	// kube-scheduler defaults to 50 QPS (burst 100), which caps it near 50 bindings per
	// second whatever its algorithm can do; berth's benchmark (bench/RESULTS.md) binds far
	// more, so berth's scheduler defaults to a limit that protects the API server only from
	// a runaway, not from normal work.
	cc := &kc.ClientConnection
	if cc.QPS == 0 {
		cc.QPS = 5000
	}
	if cc.Burst == 0 {
		cc.Burst = 10000
	}
	if cc.ContentType == "" {
		cc.ContentType = "application/vnd.kubernetes.protobuf"
	}
	if len(kc.Profiles) == 0 {
		kc.Profiles = []configv1.KubeSchedulerProfile{{}}
	}
	for i := range kc.Profiles {
		p := &kc.Profiles[i]
		if p.SchedulerName == nil {
			p.SchedulerName = ptr.To(v1.DefaultSchedulerName)
		}
		p.Plugins = mergePlugins(DefaultPlugins(), p.Plugins)
	}
	for i := range kc.Extenders {
		if kc.Extenders[i].Weight == 0 && kc.Extenders[i].PrioritizeVerb != "" {
			kc.Extenders[i].Weight = 1
		}
	}
}

// Validate checks what kube-scheduler's validation checks of the parts berth uses.
func Validate(c *Config) error {
	if p := c.PercentageOfNodesToScore; p != nil && (*p < 0 || *p > 100) {
		return fmt.Errorf("percentageOfNodesToScore: Invalid value: %d: not in valid range [0-100]", *p)
	}
	if *c.Parallelism <= 0 {
		return fmt.Errorf("parallelism: Invalid value: %d: should be an integer value greater than zero", *c.Parallelism)
	}
	if *c.PodInitialBackoffSeconds <= 0 || *c.PodMaxBackoffSeconds < *c.PodInitialBackoffSeconds {
		return fmt.Errorf("podInitialBackoffSeconds must be > 0 and podMaxBackoffSeconds >= podInitialBackoffSeconds")
	}
	names := sets.New[string]()
	for i, p := range c.Profiles {
		if *p.SchedulerName == "" {
			return fmt.Errorf("profiles[%d].schedulerName: Required value", i)
		}
		if names.Has(*p.SchedulerName) {
			return fmt.Errorf("profiles[%d].schedulerName: Duplicate value: %q", i, *p.SchedulerName)
		}
		names.Insert(*p.SchedulerName)
		if pp := p.PercentageOfNodesToScore; pp != nil && (*pp < 0 || *pp > 100) {
			return fmt.Errorf("profiles[%d].percentageOfNodesToScore: Invalid value: %d: not in valid range [0-100]", i, *pp)
		}
	}
	binders := 0
	for i, e := range c.Extenders {
		if e.URLPrefix == "" {
			return fmt.Errorf("extenders[%d].urlPrefix: Required value", i)
		}
		if e.PrioritizeVerb != "" && e.Weight <= 0 {
			return fmt.Errorf("extenders[%d].weight: Invalid value: %d: must have a positive weight applied to it", i, e.Weight)
		}
		if e.BindVerb != "" {
			binders++
		}
	}
	if binders > 1 {
		return fmt.Errorf("extenders: Invalid value: found %d extenders implementing bind", binders)
	}
	return nil
}

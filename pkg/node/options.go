package node

import (
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
)

var (
	configScheme = runtime.NewScheme()
	configCodecs = serializer.NewCodecFactory(configScheme, serializer.EnableStrict)
)

func init() {
	utilruntime.Must(kubeletconfig.AddToScheme(configScheme))
}

// LoadKubeletConfiguration reads a KubeletConfiguration (kubelet.config.k8s.io/v1beta1) file,
// the format kubelet users already have; an empty path gives the defaults. berth honours the
// settings it has (see SetKubeletDefaults) and ignores the rest.
func LoadKubeletConfiguration(path string) (*kubeletconfig.KubeletConfiguration, error) {
	kc := &kubeletconfig.KubeletConfiguration{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the kubelet configuration: %w", err)
		}
		if _, _, err := configCodecs.UniversalDecoder(kubeletconfig.SchemeGroupVersion).Decode(data, nil, kc); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	SetKubeletDefaults(kc)
	return kc, nil
}

// SetKubeletDefaults fills in the kubelet's v1beta1 defaults for the settings berth uses.
func SetKubeletDefaults(kc *kubeletconfig.KubeletConfiguration) {
	dur := func(d *metav1.Duration, v time.Duration) {
		if d.Duration == 0 {
			d.Duration = v
		}
	}
	dur(&kc.SyncFrequency, time.Minute)
	dur(&kc.FileCheckFrequency, 20*time.Second)
	dur(&kc.HTTPCheckFrequency, 20*time.Second)
	dur(&kc.NodeStatusUpdateFrequency, 10*time.Second)
	dur(&kc.NodeStatusReportFrequency, 5*time.Minute)
	dur(&kc.ImageMinimumGCAge, 2*time.Minute)
	if kc.Authorization.Mode == "" {
		kc.Authorization.Mode = kubeletconfig.KubeletAuthorizationModeWebhook
	}
	dur(&kc.Authorization.Webhook.CacheAuthorizedTTL, 5*time.Minute)
	dur(&kc.Authorization.Webhook.CacheUnauthorizedTTL, 30*time.Second)
	if kc.Port == 0 {
		kc.Port = 10250
	}
	if kc.MaxPods == 0 {
		kc.MaxPods = 110
	}
	if kc.NodeLeaseDurationSeconds == 0 {
		kc.NodeLeaseDurationSeconds = 40
	}
	if kc.PodLogsDir == "" {
		kc.PodLogsDir = "/var/log/pods"
	}
	if kc.ClusterDomain == "" {
		kc.ClusterDomain = "cluster.local"
	}
	if kc.ResolverConfig == nil {
		kc.ResolverConfig = ptr.To("/etc/resolv.conf")
	}
	if kc.ImageGCHighThresholdPercent == nil {
		kc.ImageGCHighThresholdPercent = ptr.To[int32](85)
	}
	if kc.ImageGCLowThresholdPercent == nil {
		kc.ImageGCLowThresholdPercent = ptr.To[int32](80)
	}
	if kc.ContainerLogMaxSize == "" {
		kc.ContainerLogMaxSize = "10Mi"
	}
	if kc.ContainerLogMaxFiles == nil {
		kc.ContainerLogMaxFiles = ptr.To[int32](5)
	}
	if kc.EvictionHard == nil {
		kc.EvictionHard = map[string]string{
			"memory.available":  "100Mi",
			"nodefs.available":  "10%",
			"imagefs.available": "15%",
		}
	}
	if kc.EvictionPressureTransitionPeriod.Duration == 0 {
		kc.EvictionPressureTransitionPeriod = metav1.Duration{Duration: 5 * time.Minute}
	}
	if kc.CgroupDriver == "" {
		kc.CgroupDriver = "cgroupfs"
	}
	if kc.SerializeImagePulls == nil {
		kc.SerializeImagePulls = ptr.To(true)
	}
	if kc.KubeAPIQPS == nil {
		kc.KubeAPIQPS = ptr.To[int32](50)
	}
	if kc.KubeAPIBurst == 0 {
		kc.KubeAPIBurst = 100
	}
	// containerRuntimeEndpoint stays empty unless set: berth then runs a containerd of its
	// own under the data dir (as k3s does), rather than sharing /run/containerd, which is
	// often Docker's containerd with the CRI plugin disabled.
}

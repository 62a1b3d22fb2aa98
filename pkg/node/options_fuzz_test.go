package node

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berth-cluster/berth/pkg/node/eviction"
)

// fuzzSeedKubeletConfigs are KubeletConfiguration files as kubelet users have them.
var fuzzSeedKubeletConfigs = []string{
	``,
	`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
port: 10250
maxPods: 250
clusterDomain: cluster.local
clusterDNS: [10.96.0.10, fd00::a]
resolvConf: /run/systemd/resolve/resolv.conf
cgroupDriver: cgroupfs
syncFrequency: 30s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 4s
nodeLeaseDurationSeconds: 20
imageGCHighThresholdPercent: 90
imageGCLowThresholdPercent: 70
imageMinimumGCAge: 5m
containerLogMaxSize: 50Mi
containerLogMaxFiles: 3
serializeImagePulls: false
evictionHard: {memory.available: 200Mi, nodefs.available: 5%, nodefs.inodesFree: 5%, imagefs.available: 10%}
evictionPressureTransitionPeriod: 1m
registerWithTaints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]
featureGates: {EventedPLEG: true}
staticPodURLHeader: {X-Token: [abc]}
kubeAPIQPS: 20
kubeAPIBurst: 40
`,
	`{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","resolvConf":null,"containerLogMaxFiles":null,
"evictionHard":{"memory.available":"-1","bogus":"1"},"containerLogMaxSize":"ten","imageGCHighThresholdPercent":200,"port":-1}`,
	`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
unknownField: 1
`,
}

// FuzzLoadKubeletConfiguration loads a KubeletConfiguration file and parses the settings
// the node agent parses before it runs (container log size, eviction thresholds). Nothing
// may panic, and every setting the agent dereferences is set after loading.
func FuzzLoadKubeletConfiguration(f *testing.F) {
	for _, s := range fuzzSeedKubeletConfigs {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "kubelet.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		kc, err := LoadKubeletConfiguration(path)
		if err != nil {
			return
		}
		if kc.KubeAPIQPS == nil || kc.ResolverConfig == nil || kc.ContainerLogMaxFiles == nil ||
			kc.ImageGCHighThresholdPercent == nil || kc.ImageGCLowThresholdPercent == nil || kc.SerializeImagePulls == nil {
			t.Fatalf("a loaded configuration lacks a default the agent dereferences: %+v", kc)
		}
		_, _ = resource.ParseQuantity(kc.ContainerLogMaxSize)
		_, _ = eviction.ParseThresholds(kc.EvictionHard)
	})
}

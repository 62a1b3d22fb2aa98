package node

import (
	"context"
	"hash/fnv"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/scheme"
)

// fuzzSeedNodes are nodes as node agents register and report them, and as admins edit them.
var fuzzSeedNodes = []string{
	`{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1","labels":{"kubernetes.io/hostname":"node-1","kubernetes.io/os":"linux"},
"annotations":{"node.alpha.kubernetes.io/ttl":"0"}},"spec":{"podCIDR":"10.244.0.0/24","podCIDRs":["10.244.0.0/24","fd00::/64"]},
"status":{"capacity":{"cpu":"2","memory":"4Gi","pods":"110","ephemeral-storage":"20Gi","hugepages-2Mi":"0"},
"addresses":[{"type":"InternalIP","address":"127.0.0.1"},{"type":"Hostname","address":"node-1"}],
"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":"2026-12-01T00:00:00Z"}],
"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}},"nodeInfo":{"kubeletVersion":"v1.37.2","containerRuntimeVersion":"containerd://1.6.20",
"swap":{"capacity":1024}},"images":[{"names":["busybox:latest"],"sizeBytes":1000000}]}}`,
	`apiVersion: v1
kind: Node
metadata:
  name: worker.example.com
spec:
  unschedulable: true
  providerID: berth://worker
  taints:
  - {key: node.kubernetes.io/unschedulable, effect: NoSchedule}
  - {key: dedicated, value: gpu, effect: NoExecute, timeAdded: "2026-12-01T00:00:00Z"}
  configSource: null
status:
  allocatable: {cpu: 1500m, memory: 3Gi, example.com/gpu: "2"}
  capacity: {cpu: "2", memory: 4Gi, example.com/gpu: "2"}
`,
	`{"apiVersion":"v1","kind":"Node","metadata":{"name":"bad_name","annotations":{"scheduler.alpha.kubernetes.io/preferAvoidPods":"{"}},
"spec":{"podCIDRs":["10.0.0.0/8","10.0.0.0/8","nope"],"taints":[{"key":"","effect":"Sometimes"}]},
"status":{"capacity":{"cpu":"-1","pods":"1.5"},"nodeInfo":{"swap":{"capacity":-1}},"declaredFeatures":["b","a","a"]}}`,
}

var (
	fuzzDecoder = scheme.Codecs.UniversalDeserializer()
	nodeGVK     = corev1.SchemeGroupVersion.WithKind("Node")
)

// FuzzNodeDecodeValidate feeds bytes through a node's path in the API server: decode
// (JSON, YAML, protobuf), default, Validate, then updates to a second body and to a mutated
// copy, through the main resource and nodes/status. Nothing may panic; a node that passed
// create validation must encode and pass an update that changes nothing.
func FuzzNodeDecodeValidate(f *testing.F) {
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	for i, s := range fuzzSeedNodes {
		f.Add([]byte(s), []byte(s))
		f.Add([]byte(s), []byte(fuzzSeedNodes[(i+1)%len(fuzzSeedNodes)]))
		if n, ok := decodeNode([]byte(s)); ok {
			data, err := runtime.Encode(pb, n)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, data, update []byte) {
		ctx := context.Background()
		n, ok := decodeNode(data)
		if !ok {
			return
		}
		Strategy.PrepareForCreate(ctx, n)
		if errs := Strategy.Validate(ctx, n); len(errs) > 0 {
			_ = errs.ToAggregate().Error()
			return
		}
		if _, err := runtime.Encode(pb, n); err != nil {
			t.Fatalf("a valid node does not encode: %v", err)
		}
		n.ResourceVersion = "1"
		same := n.DeepCopy()
		Strategy.PrepareForUpdate(ctx, same, n)
		if errs := Strategy.ValidateUpdate(ctx, same, n); len(errs) > 0 {
			t.Fatalf("an unchanged node fails update validation: %v", errs)
		}
		if next, ok := decodeNode(update); ok {
			validateNodeUpdates(ctx, next, n)
		}
		h := fnv.New64a()
		h.Write(data)
		h.Write(update)
		validateNodeUpdates(ctx, mutateNode(rand.New(rand.NewSource(int64(h.Sum64()))), n), n)
	})
}

func decodeNode(data []byte) (*corev1.Node, bool) {
	obj, _, err := fuzzDecoder.Decode(data, &nodeGVK, &corev1.Node{})
	if err != nil {
		return nil, false
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return nil, false
	}
	SetDefaults(n)
	return n, true
}

func validateNodeUpdates(ctx context.Context, next, old *corev1.Node) {
	main := next.DeepCopy()
	Strategy.PrepareForUpdate(ctx, main, old)
	_ = Strategy.ValidateUpdate(ctx, main, old).ToAggregate()
	status := next.DeepCopy()
	StatusStrategy.PrepareForUpdate(ctx, status, old)
	_ = StatusStrategy.ValidateUpdate(ctx, status, old).ToAggregate()
}

// mutateNode is a copy of n with some of the changes node agents, controllers and admins make.
func mutateNode(r *rand.Rand, n *corev1.Node) *corev1.Node {
	c := n.DeepCopy()
	strs := []string{"", "x", "-", "10.0.0.0/24", "::/0", "a.b/c", "\xff", "999999999999999999999Ki", string(make([]byte, 300))}
	str := func() string { return strs[r.Intn(len(strs))] }
	for k := 1 + r.Intn(4); k > 0; k-- {
		switch r.Intn(10) {
		case 0:
			c.Spec.PodCIDRs = append(c.Spec.PodCIDRs, str())
		case 1:
			c.Spec.PodCIDR = str()
		case 2:
			c.Spec.ProviderID = str()
		case 3:
			c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: str(), Value: str(), Effect: corev1.TaintEffect(str())})
		case 4:
			if c.Status.Capacity == nil {
				c.Status.Capacity = corev1.ResourceList{}
			}
			c.Status.Capacity[corev1.ResourceName(str())] = *resource.NewQuantity(r.Int63()-r.Int63(), resource.DecimalSI)
		case 5:
			c.Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: *resource.NewMilliQuantity(r.Int63()-r.Int63(), resource.DecimalSI)}
		case 6:
			c.Status.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: ptr.To(r.Int63() - r.Int63())}
		case 7:
			c.Status.Addresses = append(c.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeAddressType(str()), Address: str()})
		case 8:
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[str()] = str()
		case 9:
			c.Status.DeclaredFeatures = append(c.Status.DeclaredFeatures, str())
		}
	}
	return c
}

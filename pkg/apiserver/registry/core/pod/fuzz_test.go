package pod

import (
	"context"
	"hash/fnv"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/scheme"
)

// fuzzSeedPods are realistic manifests, the starting points of FuzzPodDecodeValidate: what
// kubectl, controllers and node agents send.
var fuzzSeedPods = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","labels":{"app":"web"}},
"spec":{"containers":[{"name":"nginx","image":"nginx:1.27","ports":[{"containerPort":80,"hostPort":8080}],
"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"1","memory":"128Mi"}}}]}}`,
	`apiVersion: v1
kind: Pod
metadata:
  generateName: job-
  namespace: batch
  annotations: {note: "x"}
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: j, uid: 0b7f2c9e-4a4b-4e3f-9a1c-7d2b8e6f5a10, controller: true}]
spec:
  serviceAccountName: runner
  restartPolicy: OnFailure
  activeDeadlineSeconds: 60
  terminationGracePeriodSeconds: 5
  initContainers:
  - {name: init, image: busybox, command: [sh, -c, "echo init"]}
  - name: sidecar
    image: busybox
    restartPolicy: Always
    startupProbe: {exec: {command: ["true"]}, periodSeconds: 1}
  containers:
  - name: main
    image: busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000
    args: ["$(GREETING)"]
    env:
    - {name: GREETING, value: hello}
    - name: POD
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: MEM
      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
    volumeMounts: [{name: scratch, mountPath: /scratch, subPathExpr: $(POD)}]
    livenessProbe: {httpGet: {path: /healthz, port: 8080}, initialDelaySeconds: 3}
    readinessProbe: {tcpSocket: {port: 8080}}
    lifecycle: {preStop: {sleep: {seconds: 2}}}
  volumes:
  - {name: scratch, emptyDir: {medium: Memory, sizeLimit: 16Mi}}
  - {name: cfg, configMap: {name: app-config, items: [{key: a, path: a.conf}]}}
  - name: token
    projected: {sources: [{serviceAccountToken: {path: token, expirationSeconds: 3600}}]}
`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"sched","namespace":"db","labels":{"app":"db","tier":"data"}},
"spec":{"schedulerName":"default-scheduler","priorityClassName":"high","priority":1000,
"nodeSelector":{"disk":"ssd"},"tolerations":[{"key":"dedicated","operator":"Equal","value":"db","effect":"NoSchedule"},
{"operator":"Exists","effect":"NoExecute","tolerationSeconds":30}],
"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[
{"key":"zone","operator":"In","values":["a","b"]}]}]}},"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
{"weight":50,"podAffinityTerm":{"topologyKey":"kubernetes.io/hostname","labelSelector":{"matchLabels":{"app":"db"}}}}]}},
"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule",
"labelSelector":{"matchLabels":{"app":"db"}},"matchLabelKeys":["tier"]}],
"schedulingGates":[{"name":"wait"}],
"securityContext":{"runAsUser":1000,"runAsNonRoot":true,"fsGroup":2000,"sysctls":[{"name":"net.ipv4.ip_local_port_range","value":"1024 65535"}]},
"containers":[{"name":"db","image":"postgres","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}},
"resources":{"limits":{"hugepages-2Mi":"2Mi","memory":"1Gi","cpu":"2"}}}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hostnet","namespace":"kube-system","deletionGracePeriodSeconds":30},
"spec":{"hostNetwork":true,"dnsPolicy":"ClusterFirstWithHostNet","nodeName":"node-1","hostAliases":[{"ip":"10.0.0.1","hostnames":["db"]}],
"dnsConfig":{"nameservers":["1.1.1.1"],"options":[{"name":"ndots","value":"2"}]},
"containers":[{"name":"agent","image":"agent:v1","ports":[{"containerPort":9100,"protocol":"TCP"}],
"volumeMounts":[{"name":"root","mountPath":"/host","readOnly":true,"mountPropagation":"HostToContainer"}]}],
"volumes":[{"name":"root","hostPath":{"path":"/","type":"Directory"}}]},
"status":{"phase":"Running","podIP":"10.0.0.5","podIPs":[{"ip":"10.0.0.5"}],"conditions":[{"type":"Ready","status":"True"}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad","labels":{"-":"x"}},"spec":{"activeDeadlineSeconds":-5,
"containers":[{"name":"c","image":"","resources":{"requests":{"cpu":"-1"}}},{"name":"c","image":"i"}]}}`,
}

// fuzzDecoder decodes as the API server's request body decoders do: JSON, YAML and protobuf,
// with the pod's kind assumed when the body names none.
var fuzzDecoder = scheme.Codecs.UniversalDeserializer()

var podGVK = corev1.SchemeGroupVersion.WithKind("Pod")

// FuzzPodDecodeValidate feeds bytes through a pod's path in the API server (decode, default,
// PrepareForCreate, Validate; then an update to a second body and to a mutated copy, through
// the main resource and pods/status). Nothing may panic; a pod that passed create validation
// must encode for storage and pass an update that changes nothing.
func FuzzPodDecodeValidate(f *testing.F) {
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	for i, s := range fuzzSeedPods {
		next := fuzzSeedPods[(i+1)%len(fuzzSeedPods)]
		f.Add([]byte(s), []byte(s))
		f.Add([]byte(s), []byte(next))
		if pod, ok := decodePod([]byte(s)); ok {
			data, err := runtime.Encode(pb, pod)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, data, update []byte) {
		ctx := context.Background()
		pod, ok := decodePod(data)
		if !ok {
			return
		}
		// What rest.BeforeCreate does before the strategy: the request's namespace, a name
		// for generateName.
		if pod.Namespace == "" {
			pod.Namespace = metav1.NamespaceDefault
		}
		if pod.Name == "" && pod.GenerateName != "" {
			pod.Name = Strategy.GenerateName(pod.GenerateName)
		}
		Strategy.PrepareForCreate(ctx, pod)
		if errs := Strategy.Validate(ctx, pod); len(errs) > 0 {
			_ = errs.ToAggregate().Error()
			return
		}
		// The API server warns of what it accepted: no valid pod may crash that, nor the same
		// spec as a workload's template.
		_ = Strategy.WarningsOnCreate(ctx, pod)
		_ = TemplateWarnings(field.NewPath("spec", "template"), &corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}, nil)
		// What was accepted must be storable, and an update that changes nothing is valid.
		if _, err := runtime.Encode(pb, pod); err != nil {
			t.Fatalf("a valid pod does not encode: %v", err)
		}
		pod.ResourceVersion = "1"
		same := pod.DeepCopy()
		Strategy.PrepareForUpdate(ctx, same, pod)
		if errs := Strategy.ValidateUpdate(ctx, same, pod); len(errs) > 0 {
			t.Fatalf("an unchanged pod fails update validation: %v", errs)
		}

		if newPod, ok := decodePod(update); ok {
			validateUpdates(ctx, newPod, pod)
		}
		h := fnv.New64a()
		h.Write(data)
		h.Write(update)
		validateUpdates(ctx, mutatePod(rand.New(rand.NewSource(int64(h.Sum64()))), pod), pod)
	})
}

func decodePod(data []byte) (*corev1.Pod, bool) {
	obj, _, err := fuzzDecoder.Decode(data, &podGVK, &corev1.Pod{})
	if err != nil {
		return nil, false
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, false
	}
	SetDefaults(pod)
	return pod, true
}

// validateUpdates runs newPod as an update of old through the main resource and through
// pods/status, each on its own copy (PrepareForUpdate changes what it is given).
func validateUpdates(ctx context.Context, newPod, old *corev1.Pod) {
	main := newPod.DeepCopy()
	Strategy.PrepareForUpdate(ctx, main, old)
	_ = Strategy.ValidateUpdate(ctx, main, old).ToAggregate()
	status := newPod.DeepCopy()
	StatusStrategy.PrepareForUpdate(ctx, status, old)
	if errs := StatusStrategy.ValidateUpdate(ctx, status, old); len(errs) == 0 {
		_ = StatusStrategy.WarningsOnUpdate(ctx, status, old)
	}
}

// mutatePod is a copy of pod with a few of the changes clients make in an update, some
// allowed (labels, image, tolerations added, status), some not (names, resources, ports).
func mutatePod(r *rand.Rand, pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	strs := []string{"", "x", "-", "a.b/c", "Ünï", "999999999999999999999", "\xff\xfe", string(make([]byte, 300))}
	str := func() string { return strs[r.Intn(len(strs))] }
	for n := 1 + r.Intn(4); n > 0; n-- {
		switch r.Intn(16) {
		case 0:
			if p.Labels == nil {
				p.Labels = map[string]string{}
			}
			p.Labels[str()] = str()
		case 1:
			if len(p.Spec.Containers) > 0 {
				p.Spec.Containers[r.Intn(len(p.Spec.Containers))].Image = str()
			}
		case 2:
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: str(), Operator: corev1.TolerationOperator(str()),
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(r.Int63() - r.Int63())})
		case 3:
			p.Spec.ActiveDeadlineSeconds = ptr.To(r.Int63() - r.Int63())
		case 4:
			p.Spec.NodeName = str()
		case 5:
			p.Name = str()
		case 6:
			if len(p.Spec.Containers) > 0 {
				c := &p.Spec.Containers[r.Intn(len(p.Spec.Containers))]
				if c.Resources.Requests == nil {
					c.Resources.Requests = corev1.ResourceList{}
				}
				c.Resources.Requests[corev1.ResourceName(str())] = *resource.NewQuantity(r.Int63()-r.Int63(), resource.DecimalSI)
			}
		case 7:
			p.Spec.Containers = nil
		case 8:
			p.Status.Phase = corev1.PodPhase(str())
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: str()})
			p.Status.PodIP = str()
		case 9:
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: str(),
				RestartCount: r.Int31() - r.Int31(), State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: r.Int31()}}})
		case 10:
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: str()})
		case 11:
			p.Spec.SchedulingGates = nil
		case 12:
			p.DeletionTimestamp = &metav1.Time{}
			p.DeletionGracePeriodSeconds = ptr.To(r.Int63() - r.Int63())
		case 13:
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: str(), Image: str()}, TargetContainerName: str()})
		case 14:
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodConditionType(str()), Status: corev1.ConditionStatus(str())})
		case 15:
			p.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(r.Int63()-r.Int63(), resource.BinarySI)}}
		}
	}
	return p
}

package nodestatus

import (
	"cmp"
	"fmt"
	"net"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// maxNamesPerImage is how many names of one image the node's status lists.
const maxNamesPerImage = 5

// statusInputs is everything the node's status is made of, read by the Controller before the
// setters run: the setters are pure functions of it, so tests need no machine and no runtime.
type statusInputs struct {
	now time.Time

	// nodeIP is the node's InternalIP, or nodeIPErr says why there is none.
	nodeIP    net.IP
	nodeIPErr error

	machine    *MachineInfo
	machineErr error

	runtimeType    string
	runtimeVersion string // "" when the runtime did not say

	images    []container.Image
	imagesErr error

	runtimeErr, networkErr                    error
	memoryPressure, diskPressure, pidPressure bool
}

// event is an event to record about the node once the status that caused it is stored.
type event struct {
	eventType, reason, message string
	// condition is the condition whose change the event reports, if any.
	condition v1.NodeConditionType
}

// statusEvent is a condition change, worded as the kubelet's recordNodeStatusEvent.
func statusEvent(nodeName string, condition v1.NodeConditionType, reason string) event {
	return event{v1.EventTypeNormal, reason, fmt.Sprintf("Node %s status is now: %s", nodeName, reason), condition}
}

// setNodeStatus fills in node's status from in, overwriting what is there except what other
// components own (extended resources, volumes), and returns the events to record and the parts
// it could not fill in.
func setNodeStatus(cfg *Config, node *v1.Node, in *statusInputs) ([]event, []error) {
	var events []event
	var errs []error
	if err := setAddresses(cfg, node, in); err != nil {
		errs = append(errs, err)
	}
	events = append(events, setMachineInfo(cfg, node, in)...)
	setVersionInfo(cfg, node, in)
	node.Status.DaemonEndpoints = v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: cfg.DaemonPort}}
	if err := setImages(cfg, node, in); err != nil {
		errs = append(errs, err)
	}
	node.Status.NodeInfo.OperatingSystem = goruntime.GOOS
	node.Status.NodeInfo.Architecture = goruntime.GOARCH
	for _, p := range pressureConditions {
		if e, ok := setPressureCondition(node, p, p.under(in), in.now); ok {
			events = append(events, statusEvent(node.Name, p.condition, e))
		}
	}
	if e, ok := setReadyCondition(node, in); ok {
		events = append(events, statusEvent(node.Name, v1.NodeReady, e))
	}
	return events, errs
}

// setAddresses reports the node's InternalIP and its host name.
func setAddresses(cfg *Config, node *v1.Node, in *statusInputs) error {
	if in.nodeIP == nil {
		return fmt.Errorf("can't get ip address of node %s. error: %w", node.Name, in.nodeIPErr)
	}
	node.Status.Addresses = []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: in.nodeIP.String()},
		{Type: v1.NodeHostName, Address: cfg.Hostname},
	}
	return nil
}

// setMachineInfo sets the capacity, the allocatable resources and the machine's identity; a new
// boot ID means the machine rebooted.
func setMachineInfo(cfg *Config, node *v1.Node, in *statusInputs) []event {
	var events []event
	if node.Status.Capacity == nil {
		node.Status.Capacity = v1.ResourceList{}
	}
	capacity := node.Status.Capacity
	capacity[v1.ResourcePods] = *resource.NewQuantity(cfg.MaxPods, resource.DecimalSI)
	if m := in.machine; m == nil {
		// As the kubelet does without machine information: no CPU, no memory.
		capacity[v1.ResourceCPU] = *resource.NewMilliQuantity(0, resource.DecimalSI)
		capacity[v1.ResourceMemory] = resource.MustParse("0Gi")
	} else {
		node.Status.NodeInfo.MachineID = m.MachineID
		node.Status.NodeInfo.SystemUUID = m.SystemUUID
		capacity[v1.ResourceCPU] = *resource.NewMilliQuantity(int64(m.NumCores)*1000, resource.DecimalSI)
		capacity[v1.ResourceMemory] = *resource.NewQuantity(m.MemoryCapacity, resource.BinarySI)
		for size, pages := range m.HugePages {
			capacity[hugePageResource(size)] = *resource.NewQuantity(size*pages, resource.BinarySI)
		}
		if m.RootfsErr == nil {
			capacity[v1.ResourceEphemeralStorage] = *resource.NewQuantity(m.RootfsCapacity, resource.BinarySI)
		}
		if old := node.Status.NodeInfo.BootID; old != "" && old != m.BootID {
			events = append(events, event{eventType: v1.EventTypeWarning, reason: "Rebooted",
				message: fmt.Sprintf("Node %s has been rebooted, boot id: %s", node.Name, m.BootID)})
		}
		node.Status.NodeInfo.BootID = m.BootID
	}
	node.Status.Allocatable = allocatable(cfg, capacity, node.Status.Allocatable)
	return events
}

func hugePageResource(size int64) v1.ResourceName {
	return v1.ResourceName(v1.ResourceHugePagesPrefix + resource.NewQuantity(size, resource.BinarySI).String())
}

// allocatable is capacity less what is reserved for the system and the node agent and what the
// hard eviction thresholds keep free (memory.available, nodefs.available), and memory less the
// huge pages. Extended resources no longer in capacity leave old; other keys of old stay.
func allocatable(cfg *Config, capacity, old v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range old {
		if _, ok := capacity[name]; ok || !isExtendedResource(name) {
			out[name] = q
		}
	}
	reserved := reservation(cfg, capacity)
	for name, c := range capacity {
		value := c.DeepCopy()
		if r, ok := reserved[name]; ok {
			value.Sub(r)
		}
		if value.Sign() < 0 {
			value.Set(0)
		}
		out[name] = value
	}
	for name, c := range capacity {
		if !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			continue
		}
		memory := out[v1.ResourceMemory]
		memory.Sub(c)
		if memory.Sign() < 0 {
			memory.Set(0)
		}
		out[v1.ResourceMemory] = memory
	}
	return out
}

// reservation is the kubelet's node allocatable reservation: system and kube reserved plus the
// hard eviction thresholds.
func reservation(cfg *Config, capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range cfg.Reserved {
		out[name] = q.DeepCopy()
	}
	add := func(name v1.ResourceName, q resource.Quantity) {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	add(v1.ResourceMemory, cfg.HardEvictionMemory)
	if storage, ok := capacity[v1.ResourceEphemeralStorage]; ok && cfg.NodefsThresholdPercent > 0 {
		add(v1.ResourceEphemeralStorage, *resource.NewQuantity(int64(float64(storage.Value())*cfg.NodefsThresholdPercent/100), resource.BinarySI))
	}
	return out
}

// isExtendedResource is a resource name outside the kubernetes.io domain (device plugins').
func isExtendedResource(name v1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") && !strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix)
}

func setVersionInfo(cfg *Config, node *v1.Node, in *statusInputs) {
	if m := in.machine; m != nil {
		node.Status.NodeInfo.KernelVersion = m.KernelVersion
		node.Status.NodeInfo.OSImage = m.OSImage
	}
	version := in.runtimeVersion
	if version == "" {
		version = "Unknown"
	}
	node.Status.NodeInfo.ContainerRuntimeVersion = in.runtimeType + "://" + version
	node.Status.NodeInfo.KubeletVersion = cfg.KubeletVersion
	// Deprecated, and cleared by the kubelet since DisableNodeKubeProxyVersion.
	node.Status.NodeInfo.KubeProxyVersion = ""
}

// setImages lists the largest images first, at most cfg.MaxImages of them (all when negative),
// with up to five names each: digests, then tags.
func setImages(cfg *Config, node *v1.Node, in *statusInputs) error {
	if in.imagesErr != nil {
		node.Status.Images = nil
		return fmt.Errorf("error getting image list: %w", in.imagesErr)
	}
	images := slices.Clone(in.images)
	// By size, largest first; by ID among equals, so that the list is stable between syncs.
	slices.SortFunc(images, func(a, b container.Image) int {
		return cmp.Or(cmp.Compare(b.Size, a.Size), cmp.Compare(a.ID, b.ID))
	})
	if cfg.MaxImages >= 0 && len(images) > cfg.MaxImages {
		images = images[:cfg.MaxImages]
	}
	var out []v1.ContainerImage
	for _, img := range images {
		names := append(slices.Clone(img.RepoDigests), img.RepoTags...)
		if len(names) > maxNamesPerImage {
			names = names[:maxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: img.Size})
	}
	node.Status.Images = out
	return nil
}

// pressureCondition describes one of the kubelet's pressure conditions with its wording.
type pressureCondition struct {
	condition                 v1.NodeConditionType
	under                     func(*statusInputs) bool
	trueReason, trueMessage   string
	trueEvent                 string
	falseReason, falseMessage string
	falseEvent                string
}

var pressureConditions = []pressureCondition{
	{
		condition:  v1.NodeMemoryPressure,
		under:      func(in *statusInputs) bool { return in.memoryPressure },
		trueReason: "KubeletHasInsufficientMemory", trueMessage: "kubelet has insufficient memory available", trueEvent: "NodeHasInsufficientMemory",
		falseReason: "KubeletHasSufficientMemory", falseMessage: "kubelet has sufficient memory available", falseEvent: "NodeHasSufficientMemory",
	},
	{
		condition:  v1.NodeDiskPressure,
		under:      func(in *statusInputs) bool { return in.diskPressure },
		trueReason: "KubeletHasDiskPressure", trueMessage: "kubelet has disk pressure", trueEvent: "NodeHasDiskPressure",
		falseReason: "KubeletHasNoDiskPressure", falseMessage: "kubelet has no disk pressure", falseEvent: "NodeHasNoDiskPressure",
	},
	{
		condition:  v1.NodePIDPressure,
		under:      func(in *statusInputs) bool { return in.pidPressure },
		trueReason: "KubeletHasInsufficientPID", trueMessage: "kubelet has insufficient PID available", trueEvent: "NodeHasInsufficientPID",
		falseReason: "KubeletHasSufficientPID", falseMessage: "kubelet has sufficient PID available", falseEvent: "NodeHasSufficientPID",
	},
}

// setPressureCondition beats the condition's heartbeat and, when the pressure changed (or the
// condition is new), its status; it returns the event of a change.
func setPressureCondition(node *v1.Node, p pressureCondition, under bool, now time.Time) (string, bool) {
	c := findCondition(node, p.condition)
	if c == nil {
		node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{Type: p.condition, Status: v1.ConditionUnknown})
		c = &node.Status.Conditions[len(node.Status.Conditions)-1]
	}
	c.LastHeartbeatTime = metav1.NewTime(now)
	status, reason, message, ev := v1.ConditionFalse, p.falseReason, p.falseMessage, p.falseEvent
	if under {
		status, reason, message, ev = v1.ConditionTrue, p.trueReason, p.trueMessage, p.trueEvent
	}
	if c.Status == status {
		return "", false
	}
	c.Status, c.Reason, c.Message = status, reason, message
	c.LastTransitionTime = metav1.NewTime(now)
	return ev, true
}

// setReadyCondition sets Ready: True when the runtime and its network are ready and the
// capacity is known, else False with the reasons. Ready stays the last condition. It returns
// NodeReady or NodeNotReady when the condition changed. Unlike the kubelet, which always
// registers NotReady first (its network plugin takes a while), berth is often Ready at its first
// status, so a first Ready condition is an event too: users wait for "NodeReady".
func setReadyCondition(node *v1.Node, in *statusInputs) (string, bool) {
	now := metav1.NewTime(in.now)
	ready := v1.NodeCondition{
		Type: v1.NodeReady, Status: v1.ConditionTrue,
		Reason: "KubeletReady", Message: "kubelet is posting ready status",
		LastHeartbeatTime: now,
	}
	errs := []error{in.runtimeErr, in.networkErr}
	var missing []string
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage} {
		if _, ok := node.Status.Capacity[name]; !ok {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		ready.Status, ready.Reason, ready.Message = v1.ConditionFalse, "KubeletNotReady", err.Error()
	}
	old := findCondition(node, v1.NodeReady)
	if old == nil {
		ready.LastTransitionTime = now
		node.Status.Conditions = append(node.Status.Conditions, ready)
		if ready.Status == v1.ConditionTrue {
			return "NodeReady", true
		}
		return "", false
	}
	changed := old.Status != ready.Status
	if changed {
		ready.LastTransitionTime = now
	} else {
		ready.LastTransitionTime = old.LastTransitionTime
	}
	*old = ready
	if !changed {
		return "", false
	}
	if ready.Status == v1.ConditionTrue {
		return "NodeReady", true
	}
	return "NodeNotReady", true
}

func findCondition(node *v1.Node, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

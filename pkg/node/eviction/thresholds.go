package eviction

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal: a resource the node can run short of.
type Signal string

// The signals of the KubeletConfiguration's evictionHard, in the order they are acted on.
const (
	SignalMemoryAvailable   Signal = "memory.available"
	SignalNodeFsAvailable   Signal = "nodefs.available"
	SignalNodeFsInodesFree  Signal = "nodefs.inodesFree"
	SignalImageFsAvailable  Signal = "imagefs.available"
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	SignalPIDAvailable      Signal = "pid.available"
)

var signalOrder = []Signal{SignalMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalImageFsAvailable, SignalImageFsInodesFree, SignalPIDAvailable}

// The resources that are not v1 resource names but appear in eviction messages.
const (
	resourceInodes v1.ResourceName = "inodes"
	resourcePIDs   v1.ResourceName = "pids"
)

// signalCondition is the node condition a signal's pressure sets.
var signalCondition = map[Signal]v1.NodeConditionType{
	SignalMemoryAvailable:   v1.NodeMemoryPressure,
	SignalNodeFsAvailable:   v1.NodeDiskPressure,
	SignalNodeFsInodesFree:  v1.NodeDiskPressure,
	SignalImageFsAvailable:  v1.NodeDiskPressure,
	SignalImageFsInodesFree: v1.NodeDiskPressure,
	SignalPIDAvailable:      v1.NodePIDPressure,
}

// signalResource is the resource an eviction for the signal reclaims (named in the message).
var signalResource = map[Signal]v1.ResourceName{
	SignalMemoryAvailable:   v1.ResourceMemory,
	SignalNodeFsAvailable:   v1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:  resourceInodes,
	SignalImageFsAvailable:  v1.ResourceEphemeralStorage,
	SignalImageFsInodesFree: resourceInodes,
	SignalPIDAvailable:      resourcePIDs,
}

// Threshold is a hard eviction threshold: the signal is met when what is available falls
// below Quantity, or below Percentage of the capacity.
type Threshold struct {
	Signal     Signal
	Quantity   *resource.Quantity
	Percentage float64 // 0 < p <= 1, when Quantity is nil
}

// value is the threshold in the signal's unit for a capacity.
func (t Threshold) value(capacity int64) *resource.Quantity {
	if t.Quantity != nil {
		return t.Quantity
	}
	format := resource.BinarySI
	if t.Signal == SignalPIDAvailable || t.Signal == SignalNodeFsInodesFree || t.Signal == SignalImageFsInodesFree {
		format = resource.DecimalSI
	}
	return resource.NewQuantity(int64(float64(capacity)*t.Percentage), format)
}

// ParseThresholds reads the KubeletConfiguration's evictionHard ("memory.available":
// "100Mi", "nodefs.available": "10%"); an error names the signal and what is wrong with it.
func ParseThresholds(hard map[string]string) ([]Threshold, error) {
	var out []Threshold
	for name, value := range hard {
		signal := Signal(name)
		if _, ok := signalCondition[signal]; !ok {
			return nil, fmt.Errorf("evictionHard: unsupported eviction signal %v", name)
		}
		t := Threshold{Signal: signal}
		value = strings.TrimSpace(value)
		if pct, ok := strings.CutSuffix(value, "%"); ok {
			var p float64
			if _, err := fmt.Sscanf(pct, "%g", &p); err != nil {
				return nil, fmt.Errorf("evictionHard[%s]: invalid percentage %q", name, value)
			}
			if p <= 0 || p > 100 {
				return nil, fmt.Errorf("evictionHard[%s]: eviction percentage threshold must be positive and at most 100%%: %s", name, value)
			}
			t.Percentage = p / 100
		} else {
			q, err := resource.ParseQuantity(value)
			if err != nil {
				return nil, fmt.Errorf("evictionHard[%s]: %w", name, err)
			}
			if q.Sign() < 0 {
				return nil, fmt.Errorf("evictionHard[%s]: eviction threshold must be positive: %s", name, value)
			}
			if q.IsZero() {
				continue // a zero threshold disables the signal
			}
			t.Quantity = &q
		}
		out = append(out, t)
	}
	order := map[Signal]int{}
	for i, s := range signalOrder {
		order[s] = i
	}
	sort.Slice(out, func(i, j int) bool { return order[out[i].Signal] < order[out[j].Signal] })
	return out, nil
}

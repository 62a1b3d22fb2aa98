package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// ErrNetworkUnknown is the network state before the runtime was first asked.
var ErrNetworkUnknown = errors.New("network state unknown")

// runtimeSyncThreshold is how old the last successful runtime check may be before the runtime
// counts as down (the kubelet's maxWaitForContainerRuntime).
const runtimeSyncThreshold = 30 * time.Second

// RuntimeState is what updateRuntimeUp last learnt of the container runtime, which the node's
// Ready condition reports. It is safe for concurrent use.
type RuntimeState struct {
	clock clock.PassiveClock

	mu              sync.RWMutex
	lastRuntimeSync time.Time
	runtimeErr      error
	networkErr      error
}

// NewRuntimeState returns the state of a runtime never checked: not ready (its status check
// has not completed) and its network unknown.
func NewRuntimeState() *RuntimeState {
	return &RuntimeState{clock: clock.RealClock{}, networkErr: ErrNetworkUnknown}
}

// SetRuntimeState records why the runtime is not ready, or nil.
func (s *RuntimeState) SetRuntimeState(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runtimeErr = err
}

// SetNetworkState records why the runtime's network is not ready, or nil.
func (s *RuntimeState) SetNetworkState(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.networkErr = err
}

// SetRuntimeSync records when the runtime last answered ready.
func (s *RuntimeState) SetRuntimeSync(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastRuntimeSync = t
}

// RuntimeErrors says why the runtime cannot run pods, or nil.
func (s *RuntimeState) RuntimeErrors() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var errs []error
	switch {
	case s.lastRuntimeSync.IsZero():
		errs = append(errs, errors.New("container runtime status check may not have completed yet"))
	case !s.lastRuntimeSync.Add(runtimeSyncThreshold).After(s.clock.Now()):
		errs = append(errs, errors.New("container runtime is down"))
	}
	if s.runtimeErr != nil {
		errs = append(errs, s.runtimeErr)
	}
	return utilerrors.NewAggregate(errs)
}

// NetworkErrors says why the runtime's network is not ready, or nil.
func (s *RuntimeState) NetworkErrors() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.networkErr == nil {
		return nil
	}
	return utilerrors.NewAggregate([]error{s.networkErr})
}

// UpdateFromStatus records the runtime's answer to Status as updateRuntimeUp does, and reports
// whether the runtime is ready: the network condition, then the runtime condition, whose
// readiness also marks the time of the last good check.
func (s *RuntimeState) UpdateFromStatus(status *container.RuntimeStatus, now time.Time) (runtimeReady bool) {
	network := status.GetRuntimeCondition(container.NetworkReady)
	if network == nil || !network.Status {
		s.SetNetworkState(fmt.Errorf("container runtime network not ready: %s", FormatRuntimeCondition(network)))
	} else {
		s.SetNetworkState(nil)
	}
	runtime := status.GetRuntimeCondition(container.RuntimeReady)
	if runtime == nil || !runtime.Status {
		s.SetRuntimeState(fmt.Errorf("container runtime not ready: %s", FormatRuntimeCondition(runtime)))
		return false
	}
	s.SetRuntimeState(nil)
	s.SetRuntimeSync(now)
	return true
}

// FormatRuntimeCondition writes a runtime condition as the kubelet does in the node's Ready
// message: "NetworkReady=false reason:NetworkPluginNotReady message:...".
func FormatRuntimeCondition(c *container.RuntimeCondition) string {
	if c == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s=%t reason:%s message:%s", c.Type, c.Status, c.Reason, c.Message)
}

// UpdateRuntimeUp asks the runtime for its status and records it in state (seed 000's
// updateRuntimeUp without the one-time start of the runtime-dependent modules, which is the
// caller's). It reports whether the runtime is ready.
func UpdateRuntimeUp(ctx context.Context, runtime interface {
	Status(ctx context.Context) (*container.RuntimeStatus, error)
}, state *RuntimeState, now time.Time) bool {
	logger := klog.FromContext(ctx)
	status, err := runtime.Status(ctx)
	if err != nil {
		logger.Error(err, "Container runtime sanity check failed")
		return false
	}
	if status == nil {
		logger.Error(nil, "Container runtime status is nil")
		return false
	}
	logger.V(4).Info("Container runtime status", "status", status)
	return state.UpdateFromStatus(status, now)
}

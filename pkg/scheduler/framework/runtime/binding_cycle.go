package runtime

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/metrics"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// maxPermitTimeout caps how long a Permit plugin may hold a pod, as kube-scheduler does.
const maxPermitTimeout = 15 * time.Minute

// RunReservePluginsReserve runs the Reserve plugins once the pod is assumed on nodeName. It
// stops at the first failure; the caller then runs RunReservePluginsUnreserve.
func (f *Framework) RunReservePluginsReserve(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) (status *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(metrics.Reserve, status, start) }()
	var current string // the plugin being called, which a panic is charged to
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, current, err) })
	record := f.shouldRecord(state)
	for _, pl := range f.reservePlugins {
		var s *framework.Status
		current = pl.Name()
		if record {
			t := time.Now()
			s = pl.Reserve(ctx, state, pod, nodeName)
			observePlugin(pl.Name(), metrics.Reserve, s.Code(), t)
		} else {
			s = pl.Reserve(ctx, state, pod, nodeName)
		}
		if s.IsSuccess() {
			continue
		}
		if s.IsRejected() {
			klog.FromContext(ctx).V(4).Info("Pod rejected by plugin", "pod", klog.KObj(pod), "plugin", pl.Name(), "status", s.Message())
			return s.WithPlugin(pl.Name())
		}
		err := s.AsError()
		klog.FromContext(ctx).Error(err, "Plugin failed", "plugin", pl.Name(), "pod", klog.KObj(pod))
		return framework.AsStatus(fmt.Errorf("running Reserve plugin %q: %w", pl.Name(), err))
	}
	return nil
}

// RunReservePluginsUnreserve undoes Reserve after a later failure: every Reserve plugin's
// Unreserve, in reverse order (Unreserve must be idempotent and cope with a Reserve that did
// not run).
func (f *Framework) RunReservePluginsUnreserve(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) {
	start := time.Now()
	defer func() { f.observePoint(metrics.Unreserve, nil, start) }()
	record := f.shouldRecord(state)
	for i := len(f.reservePlugins) - 1; i >= 0; i-- {
		pl := f.reservePlugins[i]
		// One plugin's panic must not keep the others from releasing what they reserved.
		t := time.Now()
		s := callPlugin(ctx, pl.Name(), func() *framework.Status {
			pl.Unreserve(ctx, state, pod, nodeName)
			return nil
		})
		if !s.IsSuccess() {
			klog.FromContext(ctx).Error(s.AsError(), "Plugin failed", "plugin", pl.Name(), "pod", klog.KObj(pod), "operation", "unreserve")
		}
		if record {
			observePlugin(pl.Name(), metrics.Unreserve, s.Code(), t)
		}
	}
}

// RunPermitPlugins runs the Permit plugins. A rejection or an error stops at once. If some
// plugins ask to Wait (and none rejects), the pod becomes a waiting pod: each waiting plugin
// must Allow it before its own timeout (capped at 15 minutes) runs out, and WaitOnPermit,
// in the binding cycle, blocks until then. The returned status is then Wait.
func (f *Framework) RunPermitPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) (status *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(metrics.Permit, status, start) }()
	var current string // the plugin being called, which a panic is charged to
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, current, err) })
	record := f.shouldRecord(state)
	var waits map[string]time.Duration
	var waitReasons []string
	for _, pl := range f.permitPlugins {
		var s *framework.Status
		var timeout time.Duration
		current = pl.Name()
		if record {
			t := time.Now()
			s, timeout = pl.Permit(ctx, state, pod, nodeName)
			observePlugin(pl.Name(), metrics.Permit, s.Code(), t)
		} else {
			s, timeout = pl.Permit(ctx, state, pod, nodeName)
		}
		switch {
		case s.IsSuccess():
		case s.IsRejected():
			klog.FromContext(ctx).V(4).Info("Pod rejected by plugin", "pod", klog.KObj(pod), "plugin", pl.Name(), "status", s.Message())
			return s.WithPlugin(pl.Name())
		case s.IsWait():
			if waits == nil {
				waits = map[string]time.Duration{}
			}
			waits[pl.Name()] = min(timeout, maxPermitTimeout)
			waitReasons = append(waitReasons, s.Reasons()...)
		default:
			err := s.AsError()
			klog.FromContext(ctx).Error(err, "Plugin failed", "plugin", pl.Name(), "pod", klog.KObj(pod))
			return framework.AsStatus(fmt.Errorf("running Permit plugin %q: %w", pl.Name(), err)).WithPlugin(pl.Name())
		}
	}
	if waits == nil {
		return nil
	}
	f.waitingPods.add(newWaitingPod(pod, waits, f.clock))
	klog.FromContext(ctx).V(4).Info("One or more plugins asked to wait and no plugin rejected pod", "pod", klog.KObj(pod))
	return framework.NewStatus(framework.Wait, append(waitReasons, "one or more plugins asked to wait and no plugin rejected pod")...)
}

// WaitOnPermit blocks, in the binding cycle, while the pod is a waiting pod: until every
// waiting plugin allowed it (Success), one rejected it or its timeout ran out
// (Unschedulable, with the plugin), or ctx ended (Error; the pod stops waiting). A pod that
// is not waiting returns at once.
func (f *Framework) WaitOnPermit(ctx context.Context, pod *v1.Pod) *framework.Status {
	wp := f.waitingPods.get(pod.UID)
	if wp == nil {
		return nil
	}
	defer f.waitingPods.remove(wp)
	logger := klog.FromContext(ctx)
	logger.V(4).Info("Pod waiting on permit", "pod", klog.KObj(pod))

	start := time.Now()
	var s *framework.Status
	select {
	case s = <-wp.result:
	case <-ctx.Done():
		s = framework.AsStatus(context.Cause(ctx))
		if !wp.stop(s) {
			s = <-wp.result // decided just before: that decision is there
		}
	}
	metrics.PermitWaitDuration.WithLabelValues(s.Code().String()).Observe(metrics.SinceInSeconds(start))

	if s.IsSuccess() {
		return nil
	}
	if s.IsRejected() {
		logger.V(4).Info("Pod rejected while waiting on permit", "pod", klog.KObj(pod), "status", s.Message())
		return s
	}
	err := s.AsError()
	logger.Error(err, "Failed waiting on permit for pod", "pod", klog.KObj(pod))
	return framework.AsStatus(fmt.Errorf("waiting on permit for pod: %w", err)).WithPlugin(s.Plugin())
}

// RunPreBindPlugins runs the PreBind plugins in order; Skip means the plugin has nothing to
// do for this pod. The first rejection or error stops.
func (f *Framework) RunPreBindPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) (status *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(metrics.PreBind, status, start) }()
	var current string // the plugin being called, which a panic is charged to
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, current, err) })
	record := f.shouldRecord(state)
	for _, pl := range f.preBindPlugins {
		var s *framework.Status
		current = pl.Name()
		if record {
			t := time.Now()
			s = pl.PreBind(ctx, state, pod, nodeName)
			observePlugin(pl.Name(), metrics.PreBind, s.Code(), t)
		} else {
			s = pl.PreBind(ctx, state, pod, nodeName)
		}
		if s.IsSuccess() || s.IsSkip() {
			continue
		}
		if s.IsRejected() {
			klog.FromContext(ctx).V(4).Info("Pod rejected by PreBind plugin", "pod", klog.KObj(pod), "node", nodeName, "plugin", pl.Name(), "status", s.Message())
			return s.WithPlugin(pl.Name())
		}
		err := s.AsError()
		klog.FromContext(ctx).Error(err, "Plugin failed", "plugin", pl.Name(), "pod", klog.KObj(pod), "node", nodeName)
		return framework.AsStatus(fmt.Errorf("running PreBind plugin %q: %w", pl.Name(), err))
	}
	return nil
}

// RunBindPlugins asks the Bind plugins in order; the first that does not Skip binds the pod
// and its status is the result. If all of them Skip, nothing bound the pod, which is an
// Error.
func (f *Framework) RunBindPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) (status *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(metrics.Bind, status, start) }()
	var current string // the plugin being called, which a panic is charged to
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, current, err) })
	record := f.shouldRecord(state)
	for _, pl := range f.bindPlugins {
		var s *framework.Status
		current = pl.Name()
		if record {
			t := time.Now()
			s = pl.Bind(ctx, state, pod, nodeName)
			observePlugin(pl.Name(), metrics.Bind, s.Code(), t)
		} else {
			s = pl.Bind(ctx, state, pod, nodeName)
		}
		switch {
		case s.IsSkip():
			continue
		case s.IsSuccess():
			return nil
		case s.IsRejected():
			klog.FromContext(ctx).V(4).Info("Pod rejected by Bind plugin", "pod", klog.KObj(pod), "node", nodeName, "plugin", pl.Name(), "status", s.Message())
			return s.WithPlugin(pl.Name())
		}
		err := s.AsError()
		klog.FromContext(ctx).Error(err, "Plugin Failed", "plugin", pl.Name(), "pod", klog.KObj(pod), "node", nodeName)
		return framework.AsStatus(fmt.Errorf("running Bind plugin %q: %w", pl.Name(), err))
	}
	return framework.AsStatus(fmt.Errorf("no bind plugin bound pod %s/%s: all %d skipped", pod.Namespace, pod.Name, len(f.bindPlugins)))
}

// RunPostBindPlugins tells the PostBind plugins that the pod is bound.
func (f *Framework) RunPostBindPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) {
	start := time.Now()
	defer func() { f.observePoint(metrics.PostBind, nil, start) }()
	record := f.shouldRecord(state)
	for _, pl := range f.postBindPlugins {
		// The pod is bound: a panic here is logged and the other PostBind plugins still run.
		t := time.Now()
		s := callPlugin(ctx, pl.Name(), func() *framework.Status {
			pl.PostBind(ctx, state, pod, nodeName)
			return nil
		})
		if !s.IsSuccess() {
			klog.FromContext(ctx).Error(s.AsError(), "Plugin failed", "plugin", pl.Name(), "pod", klog.KObj(pod), "node", nodeName, "operation", "postBind")
		}
		if record {
			observePlugin(pl.Name(), metrics.PostBind, s.Code(), t)
		}
	}
}

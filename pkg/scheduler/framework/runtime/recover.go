package runtime

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/scheduler/framework/parallelize"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// PanicComponent labels the scheduler's recovered panics in berth_recovered_panics_total.
const PanicComponent = framework.PanicComponent

// pluginPanicStatus is the Error status of a panic recovered while plugin (empty: the runtime
// itself, between plugins) ran.
func pluginPanicStatus(ctx context.Context, plugin string, err error) *framework.Status {
	var pe *panics.Error
	if !errors.As(err, &pe) {
		return framework.AsStatus(err)
	}
	// A panic on a parallel worker was raised again here: its own stack tells where.
	if wp, ok := pe.Value.(*parallelize.WorkerPanic); ok {
		klog.FromContext(ctx).Error(nil, "Stack of the parallel worker that panicked", "plugin", plugin, "stack", string(wp.Stack))
	}
	if plugin == "" {
		return framework.AsStatus(fmt.Errorf("panic in the scheduler framework: %w", err))
	}
	return framework.AsStatus(&framework.PluginPanicError{Plugin: plugin, Err: pe}).WithPlugin(plugin)
}

// callPlugin runs one plugin call whose status matters; a panic becomes the Error status
// naming the plugin. The Run* methods on hot paths (Filter on every node) defer
// panics.Recover themselves instead, once per call rather than once per plugin.
func callPlugin(ctx context.Context, plugin string, call func() *framework.Status) (status *framework.Status) {
	defer panics.Recover(ctx, PanicComponent, func(err error) { status = pluginPanicStatus(ctx, plugin, err) })
	return call()
}

// pluginName is the name of plugins[i], empty when i is out of range (no plugin was called).
func pluginName[P framework.Plugin](plugins []P, i int) string {
	if i < 0 || i >= len(plugins) {
		return ""
	}
	return plugins[i].Name()
}

// asPanicError is the *panics.Error of a value the caller recovered itself, logged with its
// stack (the panicking frames are still on it) and counted, as panics.Recover would have. The
// per-node calls (Filter, Score) recover by themselves: a bare recover() in their deferred
// function costs less, on every return, than calling panics.Recover.
func asPanicError(ctx context.Context, r any) error {
	return panics.Call(ctx, PanicComponent, func() error { panic(r) })
}
